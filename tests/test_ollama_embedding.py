"""The embedding path through the real llama-index OllamaEmbedding client against the fake Ollama server."""

from __future__ import annotations

import asyncio

import pytest
from helpers_vault import fake_settings

from mindnet.backends import Embedder, EmbeddingCache, embedding_key, make_embedding
from mindnet.errors import EmbeddingError


@pytest.fixture
def embedder(tmp_path, fake_ollama) -> Embedder:
    settings = fake_settings(tmp_path, fake_ollama.url)
    return Embedder(make_embedding(settings), embedding_key(settings), EmbeddingCache(None))


def embed(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    return asyncio.run(embedder.aembed(texts, what="n.md"))


def test_ollama_embedding_returns_checked_vectors_with_nomic_document_prefix(embedder, fake_ollama) -> None:
    vectors = embed(embedder, ["eins", "zwei"])
    assert [len(v) for v in vectors] == [64, 64]
    assert [b["input"] for b in fake_ollama.bodies("/api/embed")] == [
        ["search_document: eins", "search_document: zwei"]
    ]


def test_cached_texts_are_not_sent_again(embedder, fake_ollama) -> None:
    embed(embedder, ["eins"])
    embed(embedder, ["eins", "zwei", "eins"])
    assert [b["input"] for b in fake_ollama.bodies("/api/embed")] == [
        ["search_document: eins"],
        ["search_document: zwei"],
    ]
    assert (embedder.calls, embedder.embedded) == (2, 2)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("empty", "n.md: backend returned an empty vector (is the model an embedding model?)"),
        (
            "error",
            "n.md: embedding backend ollama:nomic-embed-text failed: llama runner process has terminated: "
            "exit status 2 (status code: 500)",
        ),
    ],
)
def test_bad_backend_answers_raise_embedding_error(embedder, fake_ollama, mode: str, message: str) -> None:
    fake_ollama.embed_mode = mode
    with pytest.raises(EmbeddingError) as info:
        embed(embedder, ["text"])
    assert str(info.value) == message


def test_vector_of_another_size_than_the_probe_raises(embedder, fake_ollama) -> None:
    assert asyncio.run(embedder.aprobe_dim()) == 64
    fake_ollama.embed_mode = "wrong_dim"
    with pytest.raises(EmbeddingError, match=r"^n.md: backend returned a 65-d vector, expected 64-d$"):
        embed(embedder, ["text"])


def test_ollama_down_raises_embedding_error_naming_the_backend(embedder, fake_ollama) -> None:
    fake_ollama.stop()
    with pytest.raises(EmbeddingError, match=r"^n.md: embedding backend ollama:nomic-embed-text failed: "):
        embed(embedder, ["text"])


def test_probe_asks_the_backend_even_when_the_cache_knows_the_text(embedder, fake_ollama) -> None:
    asyncio.run(embedder.aprobe_dim())
    fake_ollama.dim = 32
    assert asyncio.run(embedder.aprobe_dim()) == 32
    assert fake_ollama.count("/api/embed") == 2


def test_cached_vectors_of_another_size_are_embedded_again(embedder, fake_ollama) -> None:
    embed(embedder, ["eins"])
    fake_ollama.dim = 32
    asyncio.run(embedder.aprobe_dim())
    assert [len(v) for v in embed(embedder, ["eins"])] == [32]


class _DroppedOnce:
    """A model whose first call meets a connection reset, as a connection kept open across an Ollama restart
    does; or that always fails (`every=True`)."""

    def __init__(self, every: bool = False) -> None:
        self.calls, self.every = 0, every

    def get_text_embedding_batch(self, texts: list[str], **_: object) -> list[list[float]]:
        self.calls += 1
        if self.calls == 1 or self.every:
            import httpx
            raise httpx.ReadError("[Errno 104] Connection reset by peer")
        return [[1.0, 0.0, 0.0] for _ in texts]


def test_a_connection_reset_once_is_asked_again_and_a_dead_backend_still_fails() -> None:
    model = _DroppedOnce()
    embedder = Embedder(model, "ollama:x", EmbeddingCache(None))
    assert asyncio.run(embedder.aprobe_dim()) == 3 and model.calls == 2
    assert asyncio.run(embedder.aembed(["a", "b"])) == [[1.0, 0.0, 0.0]] * 2
    down = _DroppedOnce(every=True)
    with pytest.raises(EmbeddingError, match="Connection reset by peer"):
        asyncio.run(Embedder(down, "ollama:x", EmbeddingCache(None)).aprobe_dim())
    assert down.calls == 2                      # asked once more, not in a loop
