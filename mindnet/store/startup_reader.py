"""`StartupReader`: the retriever's reads answered from the index snapshot and the start file while local
Qdrant opens in the background (`mindnet serve` on a big vault answers within seconds instead of after every
point was unpickled).

It implements only what a search reads, with Qdrant's semantics: a dense query (cosine over unit vectors,
filtered by type, tags, note id or point ids), points by id, and counts. Anything else, and every write, needs
the real client: `Mindnet` swaps it in as soon as it is open (`MindnetRetriever.attach`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from qdrant_client import models as qm
from qdrant_client.http.models import QueryResponse

from mindnet.errors import IndexOpeningError
from mindnet.store.collections import DENSE, WITHOUT_DENSE, names
from mindnet.store.snapshot import IndexData
from mindnet.store.start_file import StartData


class StartupReader:
    def __init__(self, prefix: str, data: IndexData, start: StartData) -> None:
        self.collections = names(prefix)
        self.data = data
        self.start = start
        self.row_of = {pid: i for i, pid in enumerate(data.chunk_pids)}
        self._fields = {"type": data.chunk_type, "note_id": data.chunk_note, "tags": data.chunk_tags}

    # ------------------------------------------------------------------ what the retriever calls

    def collection_exists(self, collection_name: str) -> bool:
        return collection_name in self.collections.values()

    def count(self, collection_name: str, count_filter: qm.Filter | None = None, exact: bool = True,
              **_: Any) -> qm.CountResult:
        if collection_name == self.collections["chunks"]:
            if count_filter is None:
                return qm.CountResult(count=len(self.data.chunk_pids))
            if count_filter == WITHOUT_DENSE:
                return qm.CountResult(count=int((~self.start.has_vector).sum()))
        elif count_filter is None:
            kind = next(k for k, v in self.collections.items() if v == collection_name) \
                if self.collection_exists(collection_name) else None
            if kind is not None:
                return qm.CountResult(count=int(self.start.counts.get(kind, 0)))
        raise self._opening(f"count of {collection_name}")

    def query_points(self, collection_name: str, query: Any = None, using: str | None = None,
                     query_filter: qm.Filter | None = None, limit: int = 10, with_payload: Any = True,
                     with_vectors: Any = False, **_: Any) -> qm.QueryResponse:
        if collection_name != self.collections["chunks"] or using != DENSE or isinstance(query, qm.SparseVector):
            raise self._opening(f"a {using} query on {collection_name}")
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        rows = np.flatnonzero(self._mask(query_filter) & self.start.has_vector)
        if not len(rows) or limit <= 0:
            return QueryResponse(points=[])
        scores = self.start.vectors[rows] @ q
        k = min(limit, len(rows))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
        top = top[np.argsort(-scores[top], kind="stable")]
        return QueryResponse(points=[
            qm.ScoredPoint(id=self.data.chunk_pids[r], version=0, score=float(scores[t]),
                           payload=self.start.payload(r) if with_payload else None,
                           vector=self._vector(r, with_vectors))
            for t, r in ((t, int(rows[t])) for t in top)])

    def retrieve(self, collection_name: str, ids: Sequence[Any], with_payload: Any = True,
                 with_vectors: Any = False, **_: Any) -> list[qm.Record]:
        if collection_name != self.collections["chunks"]:
            raise self._opening(f"reading points of {collection_name}")
        out = []
        for pid in ids:
            r = self.row_of.get(str(pid))
            if r is not None:
                out.append(qm.Record(id=str(pid), payload=self.start.payload(r) if with_payload else None,
                                     vector=self._vector(r, with_vectors)))
        return out

    def close(self) -> None:
        """Nothing to release: the files were read at start."""

    # ------------------------------------------------------------------ pieces

    def _vector(self, row: int, with_vectors: Any) -> dict | None:
        wanted = [DENSE] if with_vectors is True else list(with_vectors or [])
        if DENSE not in wanted or not self.start.has_vector[row]:
            return None
        return {DENSE: self.start.vectors[row].tolist()}

    def _mask(self, flt: qm.Filter | None) -> np.ndarray:
        n = len(self.data.chunk_pids)
        mask = np.ones(n, dtype=bool)
        if flt is None:
            return mask
        if flt.should or flt.must_not or flt.min_should:
            raise self._opening("a filter with should / must_not")
        must = flt.must if isinstance(flt.must, list) else [flt.must] if flt.must else []
        for cond in must:
            if isinstance(cond, qm.HasIdCondition):
                keep = np.zeros(n, dtype=bool)
                keep[[r for pid in cond.has_id if (r := self.row_of.get(str(pid))) is not None]] = True
                mask &= keep
            elif isinstance(cond, qm.FieldCondition) and cond.key in self._fields \
                    and isinstance(cond.match, qm.MatchAny | qm.MatchValue):
                wanted = set(cond.match.any) if isinstance(cond.match, qm.MatchAny) else {cond.match.value}
                column = self._fields[cond.key]
                if cond.key == "tags":
                    hit = (any(v in wanted for v in values) for values in column)
                else:
                    hit = (value in wanted for value in column)
                mask &= np.fromiter(hit, dtype=bool, count=n)
            else:
                raise self._opening(f"the filter condition {type(cond).__name__}")
        return mask

    @staticmethod
    def _opening(what: str) -> IndexOpeningError:
        return IndexOpeningError(
            f"the index is still opening (local Qdrant loads its points at start; searches are answered from "
            f"the index snapshot meanwhile, but {what} needs Qdrant itself): retry in a few seconds")
