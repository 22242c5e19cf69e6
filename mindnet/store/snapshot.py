"""A compact snapshot of what the retriever mirrors in memory, written at import time, loaded at start.

Local Qdrant evaluates sparse search and filters in Python over every point, so the retriever keeps mirrors:
the chunks' BM25 vectors and filter fields, the link edges as CSR adjacency, note titles and the vault-wide
graph figures (in/out degrees, global PageRank). Building them means reading every point; this module does that
once per change of the index (in one linear pass, `mindnet.store.reader`) and keeps the result as numpy arrays
in one `.npz` file beside Qdrant's own files:

    <qdrant folder>/mindnet-<prefix>.snapshot.npz

The snapshot is versioned with the index by a digest of what the index holds: every note record's id,
fingerprint and edges hash (the import rewrites a note's record last, after its chunks and edges, and marks it
pending before; a rebuilt edge set changes the edges hash) and the point counts of the three collections.
Opening compares the stored digest with the index's, which costs one read of the note records and three
counts. A missing, corrupt (zip CRC, shapes, bounds), other-format or stale snapshot is rebuilt from Qdrant and
written again, never trusted. The file is replaced atomically (temp file + rename).

Only a local folder gets a file; an in-memory index rebuilds in memory, a Qdrant server needs no mirror.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
from qdrant_client import QdrantClient
from scipy import sparse  # imported with the module: not in the first search

try:    # scipy's CSR x vector kernel (what `csr_matrix @ vector` calls); guarded: a private module
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:     # pragma: no cover - another scipy layout: the public operator
    _csr_matvec = None

from mindnet.errors import StoreError
from mindnet.store.client import is_local
from mindnet.store.collections import SPARSE, kind_label, label_kinds, names
from mindnet.store.memory import no_gc
from mindnet.store.reader import iter_payloads, read_points

log = logging.getLogger(__name__)
FORMAT = 3                          # bump when the arrays change shape or meaning (2: kind labels, 3: chunk_lang)
STRUCTURAL = ("belongs_to", "next", "prev")
CHUNK_FIELDS = ["chunk_id", "note_id", "type", "tags", "path", "retriever_weight", "lang"]
NOTE_FIELDS = ["note_id", "title", "fingerprint", "edges_hash"]


class SnapshotError(StoreError):
    """A snapshot file that cannot be used (unreadable, corrupt, other format); it is rebuilt."""


class SnapshotFormatError(SnapshotError):
    """A snapshot written in another format (another mindnet version)."""


def note_of(node_id: str) -> str:
    head, sep, tail = node_id.rpartition("#c")
    return head if head and sep and len(tail) >= 2 and tail.isascii() and tail.isdigit() else node_id


# ---------------------------------------------------------------------- strings as one blob + offsets

def _pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    joined = "".join(strings)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    if joined.isascii():     # one byte per character: offsets from the lengths, one encode for all
        np.cumsum(np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)), out=offsets[1:])
        return np.frombuffer(joined.encode(), dtype=np.uint8).copy(), offsets
    encoded = [s.encode() for s in strings]
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def _permute(blob: np.ndarray, offsets: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packed strings in the order `order` (vectorised: no Python string per item)."""
    lengths = np.diff(offsets)[order]
    new_offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    gather = np.repeat(offsets[:-1][order] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return blob[gather], new_offsets


class PackedStrings:
    """Strings kept as one UTF-8 blob, decoded one at a time (300k edge payloads cost no Python objects until
    an expansion asks for a few of them)."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._data = blob.tobytes()
        self._offsets = offsets
        # indexing a memoryview gives Python ints (a numpy scalar per index costs ~10x more; expansions decode
        # hundreds of edges per query)
        self._at = memoryview(np.ascontiguousarray(offsets, dtype=np.int64))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> str:
        at = self._at
        return self._data[at[i]:at[i + 1]].decode()


# ---------------------------------------------------------------------- PageRank on CSR arrays

def _times(matrix: sparse.csr_matrix, x: np.ndarray) -> np.ndarray:
    """`matrix @ x` for a float64 CSR matrix and vector: scipy's own kernel called directly (the same sums in the
    same order), without the per-call checks that cost more than the product on a query's small subgraph."""
    if _csr_matvec is None or matrix.dtype != np.float64 or x.dtype != np.float64:
        return matrix @ x
    out = np.zeros(matrix.shape[0])
    _csr_matvec(matrix.shape[0], matrix.shape[1], matrix.indptr, matrix.indices, matrix.data, x, out)
    return out


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, *, alpha: float = 0.85,
             personalization: np.ndarray | None = None, max_iter: int = 200, tol: float = 1e-8) -> np.ndarray:
    """networkx's `pagerank` (same iteration, dangling mass to the personalisation, stop at L1 change < n * tol)
    over the weighted directed graph of `n` nodes given as edge arrays (one edge per node pair)."""
    if n == 0:
        return np.zeros(0)
    out_weight = np.bincount(src, weights=weight, minlength=n)
    scale = np.divide(1.0, out_weight, out=np.zeros(n), where=out_weight != 0)
    transition = sparse.csr_matrix((weight * scale[src], (dst, src)), shape=(n, n))   # x @ P as P^T x
    p = np.full(n, 1.0 / n) if personalization is None else personalization / personalization.sum()
    dangling = np.flatnonzero(out_weight == 0)
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        x = alpha * (_times(transition, last) + last[dangling].sum() * p) + (1 - alpha) * p
        if np.abs(x - last).sum() < n * tol:
            return x
    log.warning("PageRank did not converge in %d iterations (n=%d); using the last iterate", max_iter, n)
    return x


# ---------------------------------------------------------------------- the data

@dataclass
class IndexData:
    """Everything the local mirrors need, as arrays. Edges are the resolved, non-structural links between two
    different notes, ordered strongest first (confidence desc, then edge id), so a node's slice of the CSR
    adjacency lists its strongest links first."""

    digest: str
    # notes (the notes collection)
    note_ids: list[str]
    titles: list[str]
    note_fps: list[str]             # each note record's fingerprint and edges hash: what a patch compares
    note_ehs: list[str]
    # chunks, in point-id order, with their BM25 vectors row-major
    chunk_pids: list[str]
    chunk_ids: list[str]
    chunk_weight: np.ndarray        # float64: the note type's retriever_weight
    chunk_note: list[str]
    chunk_type: list[str]
    chunk_path: list[str]
    chunk_tags: list[list[str]]
    chunk_lang: list[str]           # the chunk's note's language ("de", "en", "" undecided)
    sparse_ptr: np.ndarray          # int64 [chunks + 1]
    sparse_terms: np.ndarray        # int64 [nnz]
    sparse_vals: np.ndarray         # float32 [nnz]
    # graph: nodes are every note and every edge end
    nodes: list[str]
    edge_src: np.ndarray            # int32 node index of the note defining the edge
    edge_dst: np.ndarray            # int32 node index of the target note
    edge_conf: np.ndarray           # float64
    edge_kind: np.ndarray           # int16 index into `kinds`
    kinds: list[str]
    edge_columns: dict[str, PackedStrings]   # edge_id, source_id, target_id, rule_id, scope, target_text, extra
    # vault-wide graph figures over distinct note pairs (GraphStats)
    in_degree: np.ndarray           # int32 per node
    out_degree: np.ndarray          # int32 per node
    pr_rel: np.ndarray              # float64 per node: global PageRank x linked nodes (1 = average); 0 unlinked
    linked: np.ndarray              # bool per node: has a link (is a node of the link graph)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def graph_notes(self) -> int:
        """N of the hub formulas: the vault's notes, or the link graph's nodes when those are more."""
        return max(len(self.note_ids), int(self.linked.sum()))

    def edge_payload(self, row: int) -> dict:
        """The edge's payload as stored in Qdrant."""
        c = self.edge_columns
        kinds = label_kinds(self.kinds[int(self.edge_kind[row])])
        text = c["target_text"][row]
        payload = {"edge_id": c["edge_id"][row], "source_id": c["source_id"][row],
                   "target_id": c["target_id"][row], "kind": kinds[0], "kinds": kinds,
                   "rule_id": c["rule_id"][row], "confidence": float(self.edge_conf[row]),
                   "note_id": self.nodes[int(self.edge_src[row])], "scope": c["scope"][row], "resolved": True,
                   "target_text": text[1:] if text else None}
        extra = c["extra"][row]
        if extra:
            payload.update(json.loads(extra))
        return payload


def index_digest(client: QdrantClient, prefix: str, notes: list | None = None) -> tuple[str, dict[str, int]]:
    """What the index holds, in one value: note records (id, fingerprint, edges hash) and point counts."""
    coll = names(prefix)
    with no_gc():
        payloads = [r.payload for r in notes] if notes is not None else \
            [p for _, p in iter_payloads(client, coll["notes"])]
        lines = sorted(f"{p.get('note_id')}\t{p.get('fingerprint')}\t{p.get('edges_hash')}\n" for p in payloads)
    counts = {kind: (client.count(name, exact=True).count if client.collection_exists(name) else -1)
              for kind, name in coll.items()}
    h = hashlib.sha256(f"format {FORMAT}\n{json.dumps(counts, sort_keys=True)}\n".encode())
    h.update("".join(lines).encode())
    return h.hexdigest(), counts


EDGE_COLUMNS = ("edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "extra")
_KNOWN = {"edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "kind", "kinds", "confidence",
          "note_id", "resolved"}


def _edge_columns(client: QdrantClient, collection: str) -> dict:
    """One pass over the edges: the resolved links between two different notes, as columns."""
    return edge_columns(p for _, p in iter_payloads(client, collection))


def edge_columns(payloads: Iterable[dict]) -> dict:
    cols: dict[str, list] = {k: [] for k in ("note", "target_note", "kind", "conf", *EDGE_COLUMNS)}
    note, target_note, kind, conf = cols["note"], cols["target_note"], cols["kind"], cols["conf"]
    edge_id, source_id, target_id, rule_id = cols["edge_id"], cols["source_id"], cols["target_id"], cols["rule_id"]
    scope, target_text, extra = cols["scope"], cols["target_text"], cols["extra"]
    for p in payloads:
        k = p.get("kind")
        n, t = p.get("note_id"), p.get("target_id")
        if k in STRUCTURAL or not p.get("resolved", True) or n is None or t is None:
            continue
        tn = note_of(t)
        if n == tn:
            continue
        note.append(n)
        target_note.append(tn)
        kind.append(kind_label(p))      # its kind and the type default kinds it carries
        conf.append(float(p.get("confidence", 1.0)))
        edge_id.append(str(p.get("edge_id", "")))
        source_id.append(str(p.get("source_id", "")))
        target_id.append(t)
        rule_id.append(str(p.get("rule_id", "")))
        scope.append(str(p.get("scope", "")))
        text = p.get("target_text")
        target_text.append("" if text is None else "=" + str(text))    # "" = None, "=..." = a text
        more = {key: v for key, v in p.items() if key not in _KNOWN} if len(p) > 10 else None
        extra.append(json.dumps(more, sort_keys=True) if more else "")
    return cols


def build(client: QdrantClient, prefix: str) -> IndexData:
    """Read the three collections once and derive every array (the graph figures included)."""
    with no_gc():
        return _build(client, prefix)


def _build(client: QdrantClient, prefix: str) -> IndexData:
    coll = names(prefix)
    started = time.perf_counter()
    notes = read_points(client, coll["notes"], fields=NOTE_FIELDS)
    digest, counts = index_digest(client, prefix, notes)
    note_ids = [r.payload.get("note_id", "") for r in notes]
    titles = [str(r.payload.get("title", "")) for r in notes]
    note_fps = [str(r.payload.get("fingerprint", "")) for r in notes]
    note_ehs = [str(r.payload.get("edges_hash", "")) for r in notes]

    chunks = read_points(client, coll["chunks"], fields=CHUNK_FIELDS, sparse=SPARSE)
    lengths = [len(r.sparse.indices) if r.sparse is not None else 0 for r in chunks]
    ptr = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    with_vec = [r.sparse for r in chunks if r.sparse is not None and len(r.sparse.indices)]
    terms = np.concatenate([np.asarray(v.indices, dtype=np.int64) for v in with_vec]) if with_vec \
        else np.zeros(0, dtype=np.int64)
    vals = np.concatenate([np.asarray(v.values, dtype=np.float32) for v in with_vec]) if with_vec \
        else np.zeros(0, dtype=np.float32)

    cols = _edge_columns(client, coll["edges"])
    conf = np.asarray(cols["conf"], dtype=np.float64)
    order = np.lexsort((np.asarray(cols["edge_id"], dtype=str), -conf)) if len(conf) else np.zeros(0, np.int64)
    nodes = list(dict.fromkeys([*note_ids, *cols["note"], *cols["target_note"]]))
    node_of = {n: i for i, n in enumerate(nodes)}
    kinds = sorted(set(cols["kind"]))
    kind_of = {k: i for i, k in enumerate(kinds)}
    src = np.fromiter(map(node_of.__getitem__, cols["note"]), dtype=np.int32, count=len(conf))[order]
    dst = np.fromiter(map(node_of.__getitem__, cols["target_note"]), dtype=np.int32, count=len(conf))[order]
    kind = np.fromiter(map(kind_of.__getitem__, cols["kind"]), dtype=np.int16, count=len(conf))[order]
    conf = conf[order]
    packed = {name: PackedStrings(*_permute(*_pack(cols[name]), order)) for name in EDGE_COLUMNS}
    in_deg, out_deg, pr_rel, linked = graph_figures(len(nodes), src, dst, conf)
    data = IndexData(
        digest=digest, note_ids=note_ids, titles=titles, note_fps=note_fps, note_ehs=note_ehs,
        chunk_pids=[r.id for r in chunks], chunk_ids=[str(r.payload.get("chunk_id", "")) for r in chunks],
        chunk_weight=np.array([float(r.payload.get("retriever_weight", 1.0)) for r in chunks], dtype=np.float64),
        chunk_note=[str(r.payload.get("note_id", "")) for r in chunks],
        chunk_type=[str(r.payload.get("type", "")) for r in chunks],
        chunk_path=[str(r.payload.get("path", "")) for r in chunks],
        chunk_tags=[list(r.payload.get("tags") or []) for r in chunks],
        chunk_lang=[str(r.payload.get("lang") or "") for r in chunks],
        sparse_ptr=ptr, sparse_terms=terms, sparse_vals=vals, nodes=nodes, edge_src=src, edge_dst=dst,
        edge_conf=conf, edge_kind=kind, kinds=kinds, edge_columns=packed, in_degree=in_deg,
        out_degree=out_deg, pr_rel=pr_rel, linked=linked, counts=counts)
    log.info("index snapshot built: %d notes, %d chunks, %d link edges in %.2f s", len(note_ids), len(chunks),
             len(conf), time.perf_counter() - started)
    return data


def distinct_pairs(src: np.ndarray, dst: np.ndarray, conf: np.ndarray, n: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One edge per (source, target) pair, with the strongest confidence."""
    if len(src) == 0:
        return src.astype(np.int64), dst.astype(np.int64), conf
    key = src.astype(np.int64) * n + dst.astype(np.int64)
    order = np.lexsort((-conf, key))
    key, conf = key[order], conf[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return key[first] // n, key[first] % n, conf[first]


def graph_figures(n: int, src: np.ndarray, dst: np.ndarray, conf: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct in/out neighbours and global PageRank (weights: the strongest confidence per pair) relative to
    the average linked note, as `GraphStats` defines them."""
    s, d, w = distinct_pairs(src, dst, conf, n)
    in_deg = np.bincount(d, minlength=n).astype(np.int32)
    out_deg = np.bincount(s, minlength=n).astype(np.int32)
    linked = (in_deg + out_deg) > 0
    pr_rel = np.zeros(n)
    if len(s):
        sub = np.flatnonzero(linked)              # PageRank over the link graph's nodes only, as networkx
        local = np.full(n, -1, dtype=np.int64)
        local[sub] = np.arange(len(sub))
        ranks = pagerank(len(sub), local[s], local[d], w)
        pr_rel[sub] = ranks * len(sub)
    return in_deg, out_deg, pr_rel, linked


# ---------------------------------------------------------------------- the file

def snapshot_path(client: QdrantClient, prefix: str) -> Path | None:
    """`<qdrant folder>/mindnet-<prefix>.snapshot.npz` for a local folder; None in memory or on a server."""
    if not is_local(client):
        return None
    location = getattr(client._client, "location", None)
    if not location or location == ":memory:" or getattr(client._client, "persistent", True) is False:
        return None
    return Path(location) / f"mindnet-{prefix}.snapshot.npz"


def _json_array(value: object) -> np.ndarray:
    return np.frombuffer(json.dumps(value, separators=(",", ":")).encode(), dtype=np.uint8).copy()


def save(data: IndexData, path: Path) -> None:
    meta = {"format": FORMAT, "digest": data.digest, "counts": data.counts, "kinds": data.kinds,
            "created": time.time()}
    columns = {}
    for name, packed in data.edge_columns.items():
        columns[f"col_{name}_blob"] = np.frombuffer(packed._data, dtype=np.uint8)
        columns[f"col_{name}_offsets"] = packed._offsets
    arrays = {
        "meta": _json_array(meta),
        "chunk_weight": data.chunk_weight,
        "strings": _json_array({"note_ids": data.note_ids, "titles": data.titles, "note_fps": data.note_fps,
                                "note_ehs": data.note_ehs, "chunk_pids": data.chunk_pids,
                                "chunk_ids": data.chunk_ids,
                                "chunk_note": data.chunk_note, "chunk_type": data.chunk_type,
                                "chunk_path": data.chunk_path, "chunk_tags": data.chunk_tags,
                                "chunk_lang": data.chunk_lang,
                                "nodes": data.nodes}),
        "sparse_ptr": data.sparse_ptr, "sparse_terms": data.sparse_terms, "sparse_vals": data.sparse_vals,
        "edge_src": data.edge_src, "edge_dst": data.edge_dst, "edge_conf": data.edge_conf,
        "edge_kind": data.edge_kind, **columns,
        "in_degree": data.in_degree, "out_degree": data.out_degree, "pr_rel": data.pr_rel, "linked": data.linked,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(path, lambda fh: np.savez(fh, **arrays))


def replace_atomically(path: Path, write_to: Callable[[BinaryIO], object]) -> None:
    """Write `path` through `write_to(file)` atomically: a temp file beside it, fsync, rename (a crash leaves
    the old file or the new one, never half of one)."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write_to(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_meta(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as f:
            return json.loads(f["meta"].tobytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise SnapshotError(f"{path}: unreadable index snapshot ({exc})") from exc


def load(path: Path) -> IndexData:
    """The snapshot in `path`; SnapshotError when it is missing, corrupt or of another format."""
    if not path.exists():
        raise SnapshotError(f"{path}: no index snapshot")
    with no_gc():
        return _load(path)


def _load(path: Path) -> IndexData:
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}     # reads every member: the zip CRC of each is checked
        meta = json.loads(arrays["meta"].tobytes())
        if meta.get("format") != FORMAT:
            raise SnapshotFormatError(f"{path}: snapshot format {meta.get('format')}, this mindnet reads {FORMAT}")
        s = json.loads(arrays["strings"].tobytes())
        data = IndexData(
            digest=meta["digest"], note_ids=s["note_ids"], titles=s["titles"], note_fps=s["note_fps"],
            note_ehs=s["note_ehs"], chunk_pids=s["chunk_pids"],
            chunk_ids=s["chunk_ids"], chunk_weight=arrays["chunk_weight"],
            chunk_note=s["chunk_note"], chunk_type=s["chunk_type"], chunk_path=s["chunk_path"],
            chunk_tags=s["chunk_tags"], chunk_lang=s["chunk_lang"], sparse_ptr=arrays["sparse_ptr"],
            sparse_terms=arrays["sparse_terms"],
            sparse_vals=arrays["sparse_vals"], nodes=s["nodes"], edge_src=arrays["edge_src"],
            edge_dst=arrays["edge_dst"], edge_conf=arrays["edge_conf"], edge_kind=arrays["edge_kind"],
            kinds=meta["kinds"], edge_columns={name: PackedStrings(arrays[f"col_{name}_blob"],
                                                                   arrays[f"col_{name}_offsets"])
                                               for name in EDGE_COLUMNS},
            in_degree=arrays["in_degree"], out_degree=arrays["out_degree"], pr_rel=arrays["pr_rel"],
            linked=arrays["linked"], counts=meta["counts"])
    except SnapshotError:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise SnapshotError(f"{path}: corrupt index snapshot ({type(exc).__name__}: {exc})") from exc
    _validate(data, path)
    return data


def _validate(d: IndexData, path: Path) -> None:
    """Shapes and bounds agree (a snapshot written by a buggy or foreign writer is not trusted)."""
    chunks, nodes, edges = len(d.chunk_pids), len(d.nodes), len(d.edge_src)
    problems = []
    if not (len(d.chunk_note) == len(d.chunk_type) == len(d.chunk_path) == len(d.chunk_tags) == len(d.chunk_ids)
            == len(d.chunk_weight) == len(d.chunk_lang) == chunks):
        problems.append("chunk columns differ in length")
    if len(d.sparse_ptr) != chunks + 1 or d.sparse_ptr[0] != 0 or np.any(np.diff(d.sparse_ptr) < 0) \
            or d.sparse_ptr[-1] != len(d.sparse_terms) or len(d.sparse_terms) != len(d.sparse_vals):
        problems.append("sparse vectors out of shape")
    if not (len(d.edge_dst) == len(d.edge_conf) == len(d.edge_kind) == edges) \
            or any(len(c) != edges for c in d.edge_columns.values()):
        problems.append("edge columns differ in length")
    for name, c in d.edge_columns.items():
        if len(c._offsets) and (c._offsets[0] != 0 or np.any(np.diff(c._offsets) < 0)
                                or c._offsets[-1] != len(c._data)):
            problems.append(f"edge column {name} out of shape")
    for name, arr in (("edge_src", d.edge_src), ("edge_dst", d.edge_dst)):
        if edges and (arr.min() < 0 or arr.max() >= nodes):
            problems.append(f"{name} out of bounds")
    if edges and (d.edge_kind.min() < 0 or d.edge_kind.max() >= len(d.kinds)):
        problems.append("edge kinds out of bounds")
    if any(len(a) != nodes for a in (d.in_degree, d.out_degree, d.pr_rel, d.linked)):
        problems.append("graph figures out of shape")
    if not (len(d.note_ids) == len(d.titles) == len(d.note_fps) == len(d.note_ehs)):
        problems.append("note columns differ in length")
    if problems:
        raise SnapshotError(f"{path}: inconsistent index snapshot: {'; '.join(problems)}")


# ---------------------------------------------------------------------- open: load if current, else rebuild

@dataclass
class Opened:
    data: IndexData
    status: str          # "loaded" | "rebuilt (missing)" | "rebuilt (stale)" | "rebuilt (corrupt: ...)" | "built"
    seconds: float


_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], IndexData] = {}     # (folder or id(client), prefix) -> the last data seen


def _cache_key(client: QdrantClient, prefix: str) -> tuple[str, str]:
    path = snapshot_path(client, prefix)
    if path:
        return (str(path), prefix)
    # an in-memory index: keyed by its client, which carries a token of its own (an id() is reused by the next
    # client once this one is gone, whose index may hold the same note records and counts: the same digest)
    token = getattr(client, "_mindnet_cache_token", None)
    if token is None:
        token = f"client-{id(client)}-{time.monotonic_ns()}"
        try:
            client._mindnet_cache_token = token
        except AttributeError:
            pass
    return (token, prefix)


def open_index(client: QdrantClient, prefix: str, *, write: bool = True) -> Opened:
    """The current index data: from this process's last build or the snapshot file when its digest matches
    the index, else rebuilt from Qdrant (and written, with `write`, for a local folder)."""
    started = time.perf_counter()
    digest, _ = index_digest(client, prefix)
    key = _cache_key(client, prefix)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and cached.digest == digest:
        return Opened(cached, "current", time.perf_counter() - started)
    path = snapshot_path(client, prefix)
    status = "built"
    stale = cached
    if path is not None and stale is None:
        try:
            data = load(path)
            if data.digest == digest:
                with _cache_lock:
                    _cache[key] = data
                return Opened(data, "loaded", time.perf_counter() - started)
            status, stale = "rebuilt (stale)", data
        except SnapshotFormatError:
            status = "rebuilt (other format)"
        except SnapshotError as exc:
            status = "rebuilt (missing)" if not path.exists() else f"rebuilt (corrupt: {exc})"
    data = None
    if stale is not None:
        # a few notes changed (a watcher save, a small re-import): patch their rows instead of reading all
        from mindnet.store.snapshot_patch import patch
        data = patch(stale, client, prefix)
        status = "patched" if data is not None else "rebuilt (stale)"
    if data is None:
        data = build(client, prefix)
    if path is not None and write:
        try:
            save(data, path)
        except OSError as exc:   # a read-only folder: the mirrors still work, the next start rebuilds
            log.warning("cannot write the index snapshot %s: %s", path, exc)
    with _cache_lock:
        _cache[key] = data
    if status != "built":
        log.info("index snapshot %s: %s", path, status)
    return Opened(data, status, time.perf_counter() - started)


def snapshot_status(client: QdrantClient, prefix: str) -> str:
    """What opening would do, without building: current | stale | missing | corrupt | none (no folder)."""
    path = snapshot_path(client, prefix)
    if path is None:
        return "none"
    if not path.exists():
        return "missing"
    try:
        meta = read_meta(path)
    except SnapshotError:
        return "corrupt"
    if meta.get("format") != FORMAT:
        return "stale"
    return "current" if meta.get("digest") == index_digest(client, prefix)[0] else "stale"


def forget(client: QdrantClient, prefix: str) -> None:
    """Drop this process's cached data for the index (tests; a dropped collection)."""
    with _cache_lock:
        _cache.pop(_cache_key(client, prefix), None)

