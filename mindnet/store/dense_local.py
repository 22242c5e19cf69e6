"""A dense search over local Qdrant's own vector column, without its per-query re-normalisation.

qdrant-client's local mode answers a cosine query by normalising the whole vector matrix again (a norm per row
and an in-place division: two passes over 38 MB at 25k chunks) and then sorting every score: ~26 ms of a
~29 ms search at 10,000 notes. The vectors of a cosine collection are already unit length (local Qdrant
normalises them when it stores them), so one matrix-vector product and a partial sort give the same hits, in
the same order, with the same scores to float rounding: ~5 ms.

Only the unfiltered query is answered here; a filter (type, tags, note ids, a folder) goes to Qdrant, whose
payload filters this module does not re-implement. A qdrant-client that keeps its columns differently, a
server, or a collection that is not cosine, make `dense_top` return None: the caller asks Qdrant as before.
"""

from __future__ import annotations

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


def dense_top(client: QdrantClient, collection: str, using: str, query: np.ndarray, limit: int,
              with_vectors: bool = False) -> list[DenseHit] | None:
    """The `limit` best live points by cosine to `query`, best first (ties in row order, as Qdrant's stable
    order gives them), or None when this client's columns cannot be read directly."""
    cols = _columns(client, collection, using)
    if cols is None:
        return None
    col, vectors, alive = cols
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
