"""Reading a whole collection in one linear pass.

qdrant-client's local mode answers every `scroll` page by sorting all point ids and evaluating the filter over
every point, so paging through a collection costs pages x points (300k edges: minutes), and one page holding
everything builds a pydantic record with a deep-copied payload per point (100k points: ~5 s). Locally this
module reads the collection's in-memory columns instead, once: payloads, the deleted mask and sparse vectors
(QdrantLocal internals, guarded: a qdrant-client that stores points differently falls back to scrolling in
large pages). A Qdrant server pages through its own indexes.

Rows come in point-id order, as a scroll returns them, so every reader sees the same order on both paths.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.store.client import is_local
from mindnet.store.memory import no_gc

log = logging.getLogger(__name__)
SERVER_PAGE = 2000
LOCAL_FALLBACK_PAGE = 50_000


@dataclass(frozen=True)
class PointRow:
    id: str
    payload: dict          # a copy restricted to the fields asked for (all fields: a shallow copy)
    sparse: qm.SparseVector | None = None


def _local_collection(client: QdrantClient, collection: str) -> Any | None:
    """QdrantLocal's collection object when its columns look as this module expects, else None."""
    if not is_local(client):
        return None
    col = getattr(client._client, "collections", {}).get(collection)
    needed = ("ids", "payload", "deleted")
    if col is None or not all(hasattr(col, a) for a in needed) or not isinstance(col.ids, dict):
        return None
    return col


def _pick(payload: dict, fields: list[str] | None) -> dict:
    return dict(payload) if fields is None else {k: payload[k] for k in fields if k in payload}


def _alive(col: Any) -> list[tuple[str, int]]:
    """(point id, row) of the collection's live points in point-id order."""
    items = sorted(col.ids.items(), key=lambda kv: str(kv[0]))
    if not items:
        return []
    idx = np.fromiter((i for _, i in items), dtype=np.int64, count=len(items))
    alive = ~np.asarray(col.deleted, dtype=bool)[idx]
    return [(str(pid), i) for (pid, i), ok in zip(items, alive.tolist(), strict=True) if ok]


def _read_local(col: Any, fields: list[str] | None, sparse: str | None) -> list[PointRow]:
    vectors = col.sparse_vectors.get(sparse) if sparse else None
    missing = col.deleted_per_vector.get(sparse) if sparse else None
    return [PointRow(pid, _pick(col.payload[i] or {}, fields),
                     vectors[i] if vectors is not None and not missing[i] else None)
            for pid, i in _alive(col)]


def iter_payloads(client: QdrantClient, collection: str) -> Iterator[tuple[str, dict]]:
    """(point id, payload) of every point, without copying where the storage allows: READ ONLY (locally the
    dicts are Qdrant's own). For one pass over a big collection (the snapshot build, `mindnet check`)."""
    if not client.collection_exists(collection):
        return
    col = _local_collection(client, collection)
    if col is not None:
        try:
            rows = _alive(col)
        except (AttributeError, TypeError, IndexError) as exc:
            log.warning("reading %s from local Qdrant's columns failed (%s); scrolling instead", collection, exc)
        else:
            for pid, i in rows:
                yield pid, col.payload[i] or {}
            return
    for row in _scroll(client, collection, None, None, LOCAL_FALLBACK_PAGE if is_local(client) else SERVER_PAGE):
        yield row.id, row.payload


def _scroll(client: QdrantClient, collection: str, fields: list[str] | None, sparse: str | None,
            page: int) -> Iterator[PointRow]:
    payload: qm.PayloadSelectorInclude | bool = qm.PayloadSelectorInclude(include=fields) if fields else True
    offset = None
    while True:
        points, offset = client.scroll(collection, limit=page, offset=offset, with_payload=payload,
                                       with_vectors=[sparse] if sparse else False)
        for p in points:
            vec = (p.vector or {}).get(sparse) if sparse and isinstance(p.vector, dict) else None
            yield PointRow(str(p.id), p.payload or {}, vec)
        if offset is None:
            return


def read_points(client: QdrantClient, collection: str, *, fields: list[str] | None = None,
                sparse: str | None = None) -> list[PointRow]:
    """Every point of `collection` (empty when it does not exist): id, payload (only `fields` when given) and
    the sparse vector named `sparse` (None where a point has none)."""
    if not client.collection_exists(collection):
        return []
    col = _local_collection(client, collection)
    if col is not None:
        try:
            with no_gc():
                return _read_local(col, fields, sparse)
        except (AttributeError, KeyError, TypeError, IndexError) as exc:   # another qdrant-client layout
            log.warning("reading %s from local Qdrant's columns failed (%s); scrolling instead", collection, exc)
    page = LOCAL_FALLBACK_PAGE if is_local(client) else SERVER_PAGE
    return list(_scroll(client, collection, fields, sparse, page))


def unit_vectors(client: QdrantClient, collection: str, point_ids: list[str], name: str) -> dict[str, np.ndarray]:
    """The dense vectors `name` of the given points that have one, L2-normalised, as float32 rows of one matrix
    (locally a row gather from the collection's matrix, not a record and a norm per point)."""
    which, matrix = unit_matrix(client, collection, point_ids, name)
    return {point_ids[i]: row for i, row in zip(which.tolist(), matrix, strict=True)}


def unit_matrix(client: QdrantClient, collection: str, point_ids: list[str], name: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """(positions in `point_ids` of the points with a vector `name`, their L2-normalised vectors as the float32
    rows of one matrix, in that order): what `unit_vectors` gives, without a dict or an array per point."""
    which, matrix = _dense_matrix(client, collection, point_ids, name)
    if not len(which):
        return which, np.zeros((0, 0), dtype=np.float32)
    matrix = matrix.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.divide(matrix, norms, out=matrix, where=norms > 0)
    return which, matrix


def _dense_matrix(client: QdrantClient, collection: str, point_ids: list[str], name: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    col = _local_collection(client, collection)
    if col is not None and name in getattr(col, "vectors", {}) and name in getattr(col, "deleted_per_vector", {}):
        get = col.ids.get
        idx = np.fromiter((-1 if (i := get(pid)) is None else i for pid in point_ids), dtype=np.int64,
                          count=len(point_ids))
        known = idx >= 0
        ok = np.zeros(len(point_ids), dtype=bool)
        ok[known] = ~(np.asarray(col.deleted, dtype=bool)[idx[known]]
                      | np.asarray(col.deleted_per_vector[name], dtype=bool)[idx[known]])
        which = np.flatnonzero(ok)
        return which, np.asarray(col.vectors[name][idx[which]], dtype=np.float32)
    found = dense_vectors(client, collection, point_ids, name)
    pos = {pid: i for i, pid in enumerate(point_ids)}
    which = np.array([pos[pid] for pid in found], dtype=np.int64)
    return which, (np.stack(list(found.values())) if found else np.zeros((0, 0), dtype=np.float32))


def dense_vectors(client: QdrantClient, collection: str, point_ids: list[str], name: str) -> dict[str, np.ndarray]:
    """The dense vectors `name` of the given points that have one, as float32 arrays (locally a row gather
    from the collection's matrix, not a record per point)."""
    col = _local_collection(client, collection)
    if col is not None and name in getattr(col, "vectors", {}) and name in getattr(col, "deleted_per_vector", {}):
        rows = [(pid, col.ids.get(pid)) for pid in point_ids]
        rows = [(pid, i) for pid, i in rows if i is not None and not col.deleted[i]
                and not col.deleted_per_vector[name][i]]
        if not rows:
            return {}
        matrix = col.vectors[name][np.fromiter((i for _, i in rows), dtype=np.int64, count=len(rows))]
        return {pid: np.asarray(v, dtype=np.float32) for (pid, _), v in zip(rows, matrix, strict=True)}
    out = {}
    for p in client.retrieve(collection, ids=point_ids, with_payload=False, with_vectors=[name]):
        vec = (p.vector or {}).get(name) if isinstance(p.vector, dict) else p.vector
        if vec is not None:
            out[str(p.id)] = np.asarray(vec, dtype=np.float32)
    return out
