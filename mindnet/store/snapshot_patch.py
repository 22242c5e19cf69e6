"""Bring a stale index snapshot up to date by re-reading only the notes that changed.

A watcher save or a small re-import rewrites a few notes; a full build reads every point (10k notes, 500k
edges: seconds). The note records say what changed: a note whose fingerprint differs (or that is new) has new
chunks and edges, a note whose edges hash differs has new edges, a note gone from the records is deleted. The
patch drops those notes' rows, reads their new chunks and edges by point id (listed in their records) and
derives the graph figures again (PageRank over all links: fractions of a second). The result equals a full
build (a test holds it to that); when more than a few notes changed, or the point counts moved without any note
record changing, the caller builds from scratch instead.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.store.collections import SPARSE, names, point_id
from mindnet.store.memory import no_gc
from mindnet.store.reader import PointRow, read_points
from mindnet.store.snapshot import (
    CHUNK_FIELDS,
    EDGE_COLUMNS,
    NOTE_FIELDS,
    IndexData,
    PackedStrings,
    _pack,
    edge_columns,
    graph_figures,
    index_digest,
)

log = logging.getLogger(__name__)
PATCH_SHARE = 0.05      # patch when at most this share of the notes changed (and at least PATCH_MIN notes)
PATCH_MIN = 50


def patch(old: IndexData, client: QdrantClient, prefix: str) -> IndexData | None:
    """`old` updated to what the index holds now, or None when a full build is the better way."""
    with no_gc():
        return _patch(old, client, prefix)


def _read_ids(client: QdrantClient, collection: str, ids: list[str], fields: list[str] | None,
              sparse: str | None) -> list[PointRow]:
    if not ids:
        return []
    payload = qm.PayloadSelectorInclude(include=fields) if fields else True
    rows = []
    for p in client.retrieve(collection, ids=ids, with_payload=payload, with_vectors=[sparse] if sparse else False):
        vec = (p.vector or {}).get(sparse) if sparse and isinstance(p.vector, dict) else None
        rows.append(PointRow(str(p.id), p.payload or {}, vec))
    return rows


def _gather(starts: np.ndarray, lengths: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """Concatenate the segments [start, start + length) of each array, in the given order."""
    total = int(lengths.sum())
    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    index = np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)
    return [a[index] for a in arrays]


def _take_strings(columns: list[PackedStrings], order: np.ndarray) -> PackedStrings:
    """Rows `order` (indices into the concatenation of `columns`) as one packed column, copied run by run (a
    patch keeps long runs of rows in place)."""
    data = b"".join(c._data for c in columns)
    starts, ends = [], []
    shift = 0
    for c in columns:
        starts.append(c._offsets[:-1] + shift)
        ends.append(c._offsets[1:] + shift)
        shift += len(c._data)
    start, end = np.concatenate(starts)[order], np.concatenate(ends)[order]
    if len(order) == 0:
        return PackedStrings(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
    breaks = np.flatnonzero(start[1:] != end[:-1]) + 1       # where the next row is not the next bytes
    first = np.concatenate([[0], breaks])
    last = np.concatenate([breaks, [len(order)]]) - 1
    blob = b"".join(data[a:b] for a, b in zip(start[first].tolist(), end[last].tolist(), strict=True))
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(end - start, out=offsets[1:])
    return PackedStrings(np.frombuffer(blob, dtype=np.uint8), offsets)


def _edge_id_keys(columns: list[PackedStrings]) -> np.ndarray:
    """Edge ids as one fixed-width bytes array (sortable by numpy)."""
    width = max((int(np.diff(c._offsets).max()) for c in columns if len(c)), default=1)
    keys = [np.frombuffer(c._data, dtype=f"S{width}") if len(c) and np.all(np.diff(c._offsets) == width)
            else np.array([c[i].encode() for i in range(len(c))], dtype=f"S{width}") for c in columns]
    return np.concatenate(keys) if keys else np.zeros(0, dtype="S1")


def _patch(old: IndexData, client: QdrantClient, prefix: str) -> IndexData | None:
    started = time.perf_counter()
    coll = names(prefix)
    notes = read_points(client, coll["notes"], fields=[*NOTE_FIELDS, "chunk_ids", "edge_ids"])
    digest, counts = index_digest(client, prefix, notes)
    if digest == old.digest:
        return old
    before = {n: (fp, eh) for n, fp, eh in zip(old.note_ids, old.note_fps, old.note_ehs, strict=True)}
    now = {str(r.payload.get("note_id", "")): r.payload for r in notes}
    content = {n for n, p in now.items() if before.get(n, ("", ""))[0] != str(p.get("fingerprint", ""))}
    relinked = {n for n, p in now.items() if n in before and before[n][1] != str(p.get("edges_hash", ""))}
    deleted = set(before) - set(now)
    touched = content | relinked | deleted
    if not touched or len(touched) > max(PATCH_MIN, PATCH_SHARE * len(now)):
        return None      # nothing a note record explains (stray points), or too much: a full build

    # chunks: drop the rows of rewritten and deleted notes, read the rewritten notes' chunks, keep point-id order
    drop = content | deleted
    kept = [i for i, n in enumerate(old.chunk_note) if n not in drop]
    fresh = _read_ids(client, coll["chunks"], [point_id(c) for n in sorted(content)
                                                for c in now[n].get("chunk_ids", [])], CHUNK_FIELDS, SPARSE)
    pids = [old.chunk_pids[i] for i in kept] + [r.id for r in fresh]
    order = sorted(range(len(pids)), key=pids.__getitem__)
    fresh_vecs = [r.sparse for r in fresh]
    fresh_len = np.array([len(v.indices) if v is not None else 0 for v in fresh_vecs], dtype=np.int64)
    fresh_terms = np.concatenate([np.asarray(v.indices, dtype=np.int64) for v in fresh_vecs if v is not None]
                                 + [np.zeros(0, dtype=np.int64)])
    fresh_vals = np.concatenate([np.asarray(v.values, dtype=np.float32) for v in fresh_vecs if v is not None]
                                + [np.zeros(0, dtype=np.float32)])
    old_len = np.diff(old.sparse_ptr)
    starts = np.concatenate([old.sparse_ptr[:-1][kept],
                             len(old.sparse_terms) + np.concatenate([[0], np.cumsum(fresh_len)[:-1]])
                             if len(fresh) else np.zeros(0, dtype=np.int64)]).astype(np.int64)
    lengths = np.concatenate([old_len[kept], fresh_len]).astype(np.int64)
    idx = np.array(order, dtype=np.int64)
    terms, vals = _gather(starts[idx], lengths[idx], np.concatenate([old.sparse_terms, fresh_terms]),
                          np.concatenate([old.sparse_vals, fresh_vals]))
    ptr = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lengths[idx], out=ptr[1:])

    def column(old_values: list, name: str, convert) -> list:
        values = [old_values[i] for i in kept] + [convert(r.payload.get(name)) for r in fresh]
        return [values[i] for i in order]

    # edges: drop the rows defined by touched notes, read their new edges
    node_of = {n: i for i, n in enumerate(old.nodes)}
    drop_nodes = np.array([node_of[n] for n in touched if n in node_of], dtype=np.int64)
    keep_rows = np.flatnonzero(~np.isin(old.edge_src, drop_nodes))
    new_ids = [point_id(e) for n in sorted(content | relinked) for e in now[n].get("edge_ids", [])]
    cols = edge_columns(r.payload for r in _read_ids(client, coll["edges"], new_ids, None, None))
    nodes = list(old.nodes)
    for n in [*now, *cols["note"], *cols["target_note"]]:
        if n not in node_of:
            node_of[n] = len(nodes)
            nodes.append(n)
    kinds = list(old.kinds) + sorted(set(cols["kind"]) - set(old.kinds))
    kind_of = {k: i for i, k in enumerate(kinds)}
    count = len(cols["conf"])
    src = np.concatenate([old.edge_src[keep_rows], np.array([node_of[n] for n in cols["note"]], dtype=np.int32)])
    dst = np.concatenate([old.edge_dst[keep_rows],
                          np.array([node_of[n] for n in cols["target_note"]], dtype=np.int32)])
    conf = np.concatenate([old.edge_conf[keep_rows], np.asarray(cols["conf"], dtype=np.float64)])
    kind = np.concatenate([old.edge_kind[keep_rows], np.array([kind_of[k] for k in cols["kind"]], dtype=np.int16)])
    fresh_packed = {name: PackedStrings(*_pack(cols[name])) for name in EDGE_COLUMNS}
    rows = np.concatenate([keep_rows, len(old.edge_src) + np.arange(count, dtype=np.int64)])
    ids = _edge_id_keys([old.edge_columns["edge_id"], fresh_packed["edge_id"]])[rows]
    strength = np.lexsort((ids, -conf)) if len(conf) else np.zeros(0, dtype=np.int64)
    packed = {name: _take_strings([old.edge_columns[name], fresh_packed[name]], rows[strength])
              for name in EDGE_COLUMNS}
    src, dst, conf, kind = src[strength], dst[strength], conf[strength], kind[strength]
    in_deg, out_deg, pr_rel, linked = graph_figures(len(nodes), src, dst, conf)
    data = IndexData(
        digest=digest, note_ids=list(now), titles=[str(p.get("title", "")) for p in now.values()],
        note_fps=[str(p.get("fingerprint", "")) for p in now.values()],
        note_ehs=[str(p.get("edges_hash", "")) for p in now.values()],
        chunk_pids=[pids[i] for i in order], chunk_ids=column(old.chunk_ids, "chunk_id", lambda v: str(v or "")),
        chunk_weight=np.array(column(list(old.chunk_weight.tolist()), "retriever_weight",
                                     lambda v: float(1.0 if v is None else v)), dtype=np.float64),
        chunk_note=column(old.chunk_note, "note_id", lambda v: str(v or "")),
        chunk_type=column(old.chunk_type, "type", lambda v: str(v or "")),
        chunk_path=column(old.chunk_path, "path", lambda v: str(v or "")),
        chunk_tags=column(old.chunk_tags, "tags", lambda v: list(v or [])),
        chunk_lang=column(old.chunk_lang, "lang", lambda v: str(v or "")),
        sparse_ptr=ptr, sparse_terms=terms, sparse_vals=vals, nodes=nodes, edge_src=src, edge_dst=dst,
        edge_conf=conf, edge_kind=kind, kinds=kinds, edge_columns=packed, in_degree=in_deg, out_degree=out_deg,
        pr_rel=pr_rel, linked=linked, counts=counts)
    log.info("index snapshot patched: %d notes changed, %d deleted, %d chunks and %d edges read in %.2f s",
             len(content | relinked), len(deleted), len(fresh), count, time.perf_counter() - started)
    return data
