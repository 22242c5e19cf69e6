"""`hash-benchmark`: a deterministic, offline hash embedding. BENCHMARK-ONLY: it measures mindnet's own
costs (import, graph, queries) without a model's; it understands nothing.

Each word (lower-cased `\\w+`) is hashed (blake2b) to one of `dim` buckets with a sign; a text's vector is
the signed bucket counts, L2-normalised. Texts sharing words get similar vectors, so a query drawn from a
note finds that note, which keeps the candidate sets of a benchmark query realistic. Select it with
MINDNET_EMBEDDING=hash-benchmark (a `mindnet serve` subprocess of bench_scale does); it is never a default.
Kept in the package (not in benchmarks/): mindnet/backends.py's `hash-benchmark` backend imports it, in the
installed `mindnet serve` that the benchmarks start.
"""

from __future__ import annotations

import hashlib
import logging
import re

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

log = logging.getLogger(__name__)
WORD = re.compile(r"\w+")
DESCRIPTION = "hash-benchmark: deterministic word-hash vectors, benchmark-only (no semantics; never for real use)"


class HashBenchmarkEmbedding(BaseEmbedding):
    """Benchmark-only: signed feature hashing of words into `dim` dimensions (see the module docstring)."""

    model_name: str = "hash-benchmark (benchmark-only)"
    dim: int = 384
    _buckets: dict[str, tuple[int, float]] = PrivateAttr(default_factory=dict)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        log.warning("embedding backend %s", DESCRIPTION)

    @classmethod
    def class_name(cls) -> str:
        return "HashBenchmarkEmbedding"

    def _bucket(self, word: str) -> tuple[int, float]:
        hit = self._buckets.get(word)
        if hit is None:
            h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
            hit = self._buckets[word] = (h % self.dim, 1.0 if (h >> 40) & 1 else -1.0)
        return hit

    def vector(self, text: str) -> list[float]:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in WORD.findall(text.lower()):
            i, sign = self._bucket(word)
            v[i] += sign
        norm = float(np.linalg.norm(v))
        if norm == 0.0:      # no words: a fixed unit vector, never a zero one (cosine of zero is undefined)
            v[0] = 1.0
            return v.tolist()
        return (v / norm).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self.vector(text)
