"""A dense search over local Qdrant's own vector column, without its per-query re-normalisation.

qdrant-client's local mode answers a cosine query by normalising the whole vector matrix again (a norm per row
and an in-place division: two passes over 38 MB at 25k chunks) and then sorting every score: ~26 ms of a
~29 ms search at 10,000 notes. The vectors of a cosine collection are already unit length (local Qdrant
normalises them when it stores them), so one matrix-vector product and a partial sort give the same hits, in
the same order, with the same scores to float rounding: ~5 ms.

A filter (type, tags, note ids, a folder) comes as the rows the retriever's in-memory mirror lets through,
mapped to Qdrant's rows by `RowMap`: local Qdrant evaluates a payload filter in Python point by point (a
search filtered by type took ~430 ms at 10,000 notes). A qdrant-client that keeps its columns differently, a
server, a collection that is not cosine, or a mirror that names a point Qdrant does not hold, make these return
None: the caller asks Qdrant as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.store.reader import _local_collection


@dataclass(frozen=True)
class DenseHit:
    """What the retriever reads of a `ScoredPoint` from a dense search without payloads."""
    id: str
    score: float
    vector: dict | None = None      # {DENSE: [...]} when asked for
    payload: dict | None = None


def _columns(client: QdrantClient, collection: str, using: str) -> tuple[Any, np.ndarray, np.ndarray] | None:
    """(collection, unit vectors, live rows mask) of a local cosine collection, or None to ask Qdrant."""
    col = _local_collection(client, collection)
    if col is None:
        return None
    try:
        vectors = col.vectors[using]
        if col.get_vector_params(using).distance != qm.Distance.COSINE:
            return None
        # a writer may be between appending a point and growing a column: read the rows every column has
        n = min(len(col.payload), len(col.ids_inv), vectors.shape[0], len(col.deleted),
                len(col.deleted_per_vector[using]))
        alive = ~np.asarray(col.deleted[:n], dtype=bool) & ~np.asarray(col.deleted_per_vector[using][:n], dtype=bool)
    except (AttributeError, KeyError, TypeError, IndexError):
        return None
    return col, vectors[:n], alive


class RowMap:
    """Which local Qdrant row holds each row of an in-memory mirror (by point id), kept until either side
    changes: a new mirror, a reopened collection, or points appended (an overwrite keeps its row, a delete only
    marks it)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._rows = np.zeros(0, dtype=np.int64)

    def allowed(self, client: QdrantClient, collection: str, point_ids: Sequence[str],
                mirror_mask: np.ndarray) -> np.ndarray | None:
        """A mask over Qdrant's rows of the points the mirror's mask keeps, or None (not local, or the two
        disagree: Qdrant filters itself then)."""
        col = _local_collection(client, collection)
        if col is None:
            return None
        try:
            size = len(col.ids_inv)
            key = (col, point_ids, size)
            if self._key is None or any(a is not b for a, b in zip(self._key[:2], key[:2], strict=True)) \
                    or self._key[2] != size:
                row_of = {str(pid): row for pid, row in col.ids.items()}     # ids may be ints or UUIDs
                self._rows = np.fromiter((row_of.get(pid, -1) for pid in point_ids), dtype=np.int64,
                                         count=len(point_ids))
                self._key = key
        except (AttributeError, TypeError):
            return None
        kept = self._rows[np.asarray(mirror_mask, dtype=bool)]
        if (kept < 0).any():
            return None
        out = np.zeros(size, dtype=bool)
        out[kept] = True
        return out


def dense_top(client: QdrantClient, collection: str, using: str, query: np.ndarray, limit: int,
              with_vectors: bool = False, allowed: np.ndarray | None = None) -> list[DenseHit] | None:
    """The `limit` best live points by cosine to `query`, best first (ties in row order), among the rows
    `allowed` marks (from `RowMap.allowed`; None: all), or None when this client's columns cannot be read
    directly."""
    cols = _columns(client, collection, using)
    if cols is None:
        return None
    col, vectors, alive = cols
    if allowed is not None:
        if len(allowed) < len(alive):
            return None
        alive = alive & allowed[: len(alive)]
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    q = q / norm if norm > 0 else q
    rows = np.flatnonzero(alive)
    if not len(rows) or limit <= 0:
        return []
    scores = vectors @ q if len(rows) == len(alive) else vectors[rows] @ q
    k = min(limit, len(rows))
    top = np.argpartition(-scores, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
    top = top[np.lexsort((rows[top], -scores[top]))]
    return [DenseHit(id=str(col.ids_inv[r]), score=float(scores[t]),
                     vector={using: vectors[r].tolist()} if with_vectors else None)
            for t, r in ((int(t), int(rows[t])) for t in top)]
