"""An in-memory mirror of the chunks' BM25 vectors and filter fields, for local Qdrant.

Embedded Qdrant scores sparse vectors and evaluates filters in Python over every point (measured on SciFact,
5k chunks: ~290 ms per hybrid query). The index snapshot (`mindnet.store.snapshot`, written at import time)
gives numpy postings instead: a sparse search, the BM25 of any candidate, the chunks of a note and every
filter are then array operations. IDF follows Qdrant's `Modifier.IDF`: ln(1 + (N - n + 0.5) / (n + 0.5)).
A Qdrant server has real indexes; the retriever queries it directly and does not build this mirror.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.retrieval.query import Filters
from mindnet.store.collections import SPARSE, names
from mindnet.store.snapshot import IndexData

FIELDS = ["note_id", "type", "tags", "path", "lang"]
RECENT_QUERIES = 8      # sparse queries whose BM25 arrays are kept (one array: 4 bytes per chunk)


class LexicalIndex:
    def __init__(self, point_ids: list[str], payloads: list[dict], sparse: list[tuple[list[int], list[float]]]):
        lengths = [len(indices) for indices, _ in sparse]
        ptr = np.zeros(len(sparse) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        terms = np.fromiter((t for indices, _ in sparse for t in indices), dtype=np.int64, count=int(ptr[-1]))
        vals = np.fromiter((v for _, values in sparse for v in values), dtype=np.float32, count=int(ptr[-1]))
        self._setup(point_ids, [str(p.get("note_id", "")) for p in payloads],
                    [str(p.get("type", "")) for p in payloads], [str(p.get("path", "")) for p in payloads],
                    [list(p.get("tags") or []) for p in payloads], ptr, terms, vals,
                    [str(p.get("chunk_id", "")) for p in payloads],
                    np.array([float(p.get("retriever_weight", 1.0)) for p in payloads], dtype=np.float64),
                    [str(p.get("lang") or "") for p in payloads])

    @classmethod
    def from_data(cls, data: IndexData) -> LexicalIndex:
        """The mirror from the index snapshot's arrays (no Qdrant read)."""
        index = cls.__new__(cls)
        index._setup(data.chunk_pids, data.chunk_note, data.chunk_type, data.chunk_path, data.chunk_tags,
                     data.sparse_ptr, data.sparse_terms, data.sparse_vals, data.chunk_ids, data.chunk_weight,
                     data.chunk_lang)
        return index

    def _setup(self, point_ids: list[str], note_ids: list[str], types: list[str], paths: list[str],
               tags: list[list[str]], ptr: np.ndarray, terms: np.ndarray, vals: np.ndarray, chunk_ids: list[str],
               weights: np.ndarray, langs: list[str]) -> None:
        """Row-major BM25 vectors (CSR by chunk) turned term-major: one posting (rows, values) per term."""
        self.point_ids = point_ids
        self._recent: dict[tuple[tuple, tuple], np.ndarray] = {}
        self.chunk_ids = chunk_ids
        self.weights = weights
        self.row_of = {pid: i for i, pid in enumerate(point_ids)}
        self.note_ids = np.array(note_ids, dtype=object)
        self.types = np.array(types, dtype=object)
        self.langs = langs
        self.paths = paths
        self.tags = [set(t) for t in tags]
        self.rows_of_note: dict[str, list[int]] = {}
        for i, nid in enumerate(note_ids):
            self.rows_of_note.setdefault(nid, []).append(i)
        rows = np.repeat(np.arange(len(point_ids), dtype=np.int64), np.diff(ptr))
        order = np.argsort(terms, kind="stable")           # rows stay ascending within each term
        sorted_terms = terms[order]
        self._rows, self._vals = rows[order], vals[order].astype(np.float32)
        unique, starts, counts = np.unique(sorted_terms, return_index=True, return_counts=True)
        self._term_pos = dict(zip(unique.tolist(), range(len(unique)), strict=True))
        self._starts, self._ends = starts, starts + counts
        n = len(point_ids)
        self._idf = np.log(1 + (n - counts + 0.5) / (counts + 0.5))

    @property
    def postings(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """term -> (rows, BM25 term weights), for inspection (search uses the arrays directly)."""
        return {t: (self._rows[self._starts[i]:self._ends[i]], self._vals[self._starts[i]:self._ends[i]])
                for t, i in self._term_pos.items()}

    @property
    def idf(self) -> dict[int, float]:
        return {t: float(self._idf[i]) for t, i in self._term_pos.items()}

    @classmethod
    def load(cls, client: QdrantClient, prefix: str) -> LexicalIndex:
        """The mirror read from the chunks collection in one pass (without a snapshot)."""
        from mindnet.store.reader import read_points
        rows = read_points(client, names(prefix)["chunks"], fields=FIELDS, sparse=SPARSE)
        return cls([r.id for r in rows], [r.payload for r in rows],
                   [(list(r.sparse.indices), list(r.sparse.values)) if r.sparse is not None else ([], [])
                    for r in rows])

    def __len__(self) -> int:
        return len(self.point_ids)

    def scores(self, query: qm.SparseVector) -> np.ndarray:
        """BM25 of every chunk for the query (query values x IDF x the stored BM25 term weights), read-only.
        One hybrid query asks for the same sparse query's scores several times (search, the candidates' BM25,
        the graph's candidates): the last few are kept."""
        key = (tuple(query.indices), tuple(query.values))
        cached = self._recent.get(key)
        if cached is not None:
            return cached
        out = np.zeros(len(self.point_ids), dtype=np.float32)
        for term, qv in zip(query.indices, query.values, strict=True):
            i = self._term_pos.get(term)
            if i is not None:
                a, b = self._starts[i], self._ends[i]
                out[self._rows[a:b]] += np.float32(qv * self._idf[i]) * self._vals[a:b]
        out.flags.writeable = False
        if len(self._recent) >= RECENT_QUERIES:
            self._recent.pop(next(iter(self._recent)))
        self._recent[key] = out
        return out

    def mask(self, filters: Filters) -> np.ndarray | None:
        """Rows passing the request's filters (None: no filter)."""
        if filters.empty:
            return None
        keep = np.ones(len(self.point_ids), dtype=bool)
        if filters.types:
            keep &= np.isin(self.types, filters.types)
        if filters.note_ids:
            keep &= np.isin(self.note_ids, filters.note_ids)
        if filters.tags:
            wanted = set(filters.tags)
            keep &= np.array([bool(t & wanted) for t in self.tags], dtype=bool)
        folder = (filters.path_prefix or "").strip("/")
        if folder:
            keep &= np.array([p.startswith(folder + "/") for p in self.paths], dtype=bool)
        return keep

    def search(self, query: qm.SparseVector, limit: int, mask: np.ndarray | None) -> list[tuple[str, float]]:
        """The `limit` best chunks with a positive score, best first."""
        s = self.scores(query)
        if mask is not None:
            s = np.where(mask, s, 0.0)
        hits = np.flatnonzero(s > 0)
        if len(hits) > limit:
            hits = hits[np.argpartition(-s[hits], limit - 1)[:limit]]
        hits = hits[np.argsort(-s[hits], kind="stable")]
        return [(self.point_ids[i], float(s[i])) for i in hits]

    def score_of(self, query: qm.SparseVector, point_ids: Sequence[str]) -> dict[str, float]:
        s = self.scores(query)
        return {pid: float(s[self.row_of[pid]]) for pid in point_ids if pid in self.row_of}

    def chunks_of_notes(self, note_ids: Sequence[str], mask: np.ndarray | None) -> list[str]:
        return [self.point_ids[r] for r in self.rows_of_notes(note_ids, mask)]

    def rows_of_notes(self, note_ids: Sequence[str], mask: np.ndarray | None) -> list[int]:
        rows = [r for nid in note_ids for r in self.rows_of_note.get(nid, ())]
        return [r for r in rows if mask is None or mask[r]]

    def brief_payload(self, row: int) -> dict:
        """The fields ranking needs (the full payload is read from Qdrant only for the hits shown)."""
        return {"chunk_id": self.chunk_ids[row], "note_id": str(self.note_ids[row]), "type": str(self.types[row]),
                "path": self.paths[row], "tags": sorted(self.tags[row]),
                "retriever_weight": float(self.weights[row]), "lang": self.langs[row]}
