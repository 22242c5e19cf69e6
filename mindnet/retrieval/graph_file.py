"""The link graph as compact arrays, kept in memory beside the engine and, for an embedded index, as a file.

Graph expansion reads the links around a query's hits several times per query. Reading them from the edges
collection by a keyword filter costs 38-67 ms for 20 notes at 970,000 edge points (measured with Qdrant Edge);
a CSR adjacency in memory answers in microseconds. So the resolved links between different notes, their
payloads (for explanations), the note titles and the vault-wide figures (in/out degrees, global PageRank) are
held as numpy arrays (`GraphData`), built from the edges collection in one pass and kept as one file beside the
shards:

    <index folder>/<prefix>.graph.npz

The graph is versioned with the index by a digest of what the index holds: every note record's id, fingerprint
and edges hash (the import rewrites a note's record last, after its chunks and edges, and marks it pending
before; a rebuilt edge set changes the edges hash) and the point counts of the notes and edges collections.
The graph also keeps the index's token (`Store.read_token`) when nothing was written while it was read: an
import clears the token before its first write and sets a new one after its last, so a graph whose token is
the index's is current, and opening needs one small read instead of all 30,000 note records (3.5 s at that
size). Without a matching token, opening compares the stored digest with the index's (one read of the note
records and two counts); a missing, corrupt, other-format or stale file is never trusted: a few changed
notes are patched in (`patch`), otherwise the graph is built again, and the file is replaced atomically. A
Qdrant server keeps no file: its graph is built at open and patched after each import in memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mindnet.errors import StoreError
from mindnet.store.collections import kind_label, label_kinds, point_id
from mindnet.store.engine import Store, Where
from mindnet.store.folder import replace_atomically

log = logging.getLogger(__name__)
FORMAT = 5                          # bump when the arrays change shape or meaning (5: the notes' chunks and fields)
STRUCTURAL = ("belongs_to", "next", "prev")
# what a note record tells the graph: identity and version, and what ranking needs of a note the graph reaches
# (every chunk of a note carries the same values)
NOTE_FIELDS = ["note_id", "title", "fingerprint", "edges_hash", "chunk_ids", "type", "path", "tags",
               "retriever_weight", "lang"]
EDGE_COLUMNS = ("edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "extra")
_KNOWN = {"edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "kind", "kinds", "confidence",
          "note_id", "resolved"}
# the links of the graph: edges that are not the structure inside a note (unresolved ones are dropped while
# reading: qdrant-edge-py 0.9 passes a boolean match value as the integer 1, which no boolean field matches)
LINKS = Where(exclude=(("kind", STRUCTURAL),))
PATCH_SHARE = 0.05      # patch when at most this share of the notes changed (and at least PATCH_MIN notes)
PATCH_MIN = 50


class GraphFileError(StoreError):
    """A graph file that cannot be used (unreadable, corrupt, other format); it is rebuilt."""


class GraphFormatError(GraphFileError):
    """A graph file written in another format (another mindnet version)."""


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
        self.data = blob.tobytes()
        self.offsets = offsets
        # indexing a memoryview gives Python ints (a numpy scalar per index costs ~10x more; expansions decode
        # hundreds of edges per query)
        self._at = memoryview(np.ascontiguousarray(offsets, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        at = self._at
        return self.data[at[i]:at[i + 1]].decode()


def take_strings(columns: list[PackedStrings], order: np.ndarray) -> PackedStrings:
    """Rows `order` (indices into the concatenation of `columns`) as one packed column, copied run by run (a
    patch keeps long runs of rows in place)."""
    if len(order) == 0:
        return PackedStrings(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
    data = b"".join(c.data for c in columns)
    starts, ends = [], []
    shift = 0
    for c in columns:
        starts.append(c.offsets[:-1] + shift)
        ends.append(c.offsets[1:] + shift)
        shift += len(c.data)
    start, end = np.concatenate(starts)[order], np.concatenate(ends)[order]
    breaks = np.flatnonzero(start[1:] != end[:-1]) + 1       # where the next row is not the next bytes
    first = np.concatenate([[0], breaks])
    last = np.concatenate([breaks, [len(order)]]) - 1
    blob = b"".join(data[a:b] for a, b in zip(start[first].tolist(), end[last].tolist(), strict=True))
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(end - start, out=offsets[1:])
    return PackedStrings(np.frombuffer(blob, dtype=np.uint8), offsets)


# ---------------------------------------------------------------------- PageRank on CSR arrays

def pagerank(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, *, alpha: float = 0.85,
             personalization: np.ndarray | None = None, max_iter: int = 200, tol: float = 1e-8) -> np.ndarray:
    """networkx's `pagerank` (same iteration, dangling mass to the personalisation, stop at L1 change < n * tol)
    over the weighted directed graph of `n` nodes given as edge arrays (one edge per node pair)."""
    from scipy import sparse  # only when a graph is built: `check` and a plain start read the file
    if n == 0:
        return np.zeros(0)
    out_weight = np.bincount(src, weights=weight, minlength=n)
    scale = np.divide(1.0, out_weight, out=np.zeros(n), where=out_weight != 0)
    transition = sparse.csr_array((weight * scale[src], (dst, src)), shape=(n, n))   # x @ P as P^T x
    p = np.full(n, 1.0 / n) if personalization is None else personalization / personalization.sum()
    dangling = np.flatnonzero(out_weight == 0)
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        x = alpha * (transition @ last + last[dangling].sum() * p) + (1 - alpha) * p
        if np.abs(x - last).sum() < n * tol:
            return x
    log.warning("PageRank did not converge in %d iterations (n=%d); using the last iterate", max_iter, n)
    return x


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


# ---------------------------------------------------------------------- the data

@dataclass
class GraphData:
    """The link graph as arrays. Edges are the resolved, non-structural links between two different notes,
    ordered strongest first (confidence desc, then edge id), so a node's slice of the CSR adjacency lists its
    strongest links first."""

    digest: str
    # notes (the notes collection)
    note_ids: list[str]
    titles: list[str]
    note_fps: list[str]             # each note record's fingerprint and edges hash: what a patch compares
    note_ehs: list[str]
    note_meta: list[dict]           # per note: its chunks [[chunk id, point id], ...] and ranking fields
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
    token: str = ""                 # the index's token while it was read ("": none; then only the digest says)

    @property
    def graph_notes(self) -> int:
        """N of the hub formulas: the vault's notes, or the link graph's nodes when those are more."""
        return max(len(self.note_ids), int(self.linked.sum()))

    def edge_payload(self, row: int) -> dict:
        """The edge's payload as stored in the edges collection."""
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


def note_meta(record: dict) -> dict:
    """What ranking needs of a note the graph reaches, from its record: its chunks and the fields they share."""
    return {"chunks": [[c, point_id(c)] for c in record.get("chunk_ids") or []],
            "type": str(record.get("type") or ""), "path": str(record.get("path") or ""),
            "tags": list(record.get("tags") or []), "retriever_weight": float(record.get("retriever_weight", 1.0)),
            "lang": str(record.get("lang") or "")}


def note_records(store: Store, fields: list[str] | None = None) -> list[dict]:
    if not store.exists("notes"):
        return []
    return [r.payload for r in store.scroll("notes", payload=fields or NOTE_FIELDS)]


def index_digest(store: Store, notes: list[dict] | None = None) -> tuple[str, dict[str, int]]:
    """What the index holds, in one value: note records (id, fingerprint, edges hash) and point counts."""
    payloads = notes if notes is not None else note_records(store)
    lines = sorted(f"{p.get('note_id')}\t{p.get('fingerprint')}\t{p.get('edges_hash')}\n" for p in payloads)
    counts = {kind: (store.count(kind) if store.exists(kind) else -1) for kind in ("notes", "edges")}
    h = hashlib.sha256(f"format {FORMAT}\n{json.dumps(counts, sort_keys=True)}\n".encode())
    h.update("".join(lines).encode())
    return h.hexdigest(), counts


def edge_columns(payloads: Iterable[dict]) -> dict:
    """The resolved links between two different notes, as columns."""
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


def _still(store: Store, token: str | None) -> str:
    """`token` if the index still has it: nothing was written while the graph was read (an import clears the
    token before its first write and sets a new one after its last), so the graph is that state's."""
    return token if token and store.read_token() == token else ""


def build(store: Store) -> GraphData:
    """Read the note records and the link edges once and derive every array (the graph figures included)."""
    started = time.perf_counter()
    token = store.read_token()
    notes = note_records(store)
    digest, counts = index_digest(store, notes)
    edges = store.scroll("edges", LINKS) if store.exists("edges") else iter(())
    cols = edge_columns(r.payload for r in edges)
    conf = np.asarray(cols["conf"], dtype=np.float64)
    order = np.lexsort((np.asarray(cols["edge_id"], dtype=str), -conf)) if len(conf) else np.zeros(0, np.int64)
    note_ids = [str(p.get("note_id", "")) for p in notes]
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
    data = GraphData(
        digest=digest, note_ids=note_ids, titles=[str(p.get("title", "")) for p in notes],
        note_fps=[str(p.get("fingerprint", "")) for p in notes], note_ehs=[str(p.get("edges_hash", "")) for p in notes],
        note_meta=[note_meta(p) for p in notes],
        nodes=nodes, edge_src=src, edge_dst=dst, edge_conf=conf, edge_kind=kind, kinds=kinds, edge_columns=packed,
        in_degree=in_deg, out_degree=out_deg, pr_rel=pr_rel, linked=linked, counts=counts,
        token=_still(store, token))
    log.info("link graph built: %d notes, %d link edges in %.2f s", len(note_ids), len(conf),
             time.perf_counter() - started)
    return data


# ---------------------------------------------------------------------- patch: re-read only what changed

def _edge_id_keys(columns: list[PackedStrings]) -> np.ndarray:
    """Edge ids as one fixed-width bytes array (sortable by numpy)."""
    width = max((int(np.diff(c.offsets).max()) for c in columns if len(c)), default=1)
    keys = [np.frombuffer(c.data, dtype=f"S{width}") if len(c) and np.all(np.diff(c.offsets) == width)
            else np.array([c[i].encode() for i in range(len(c))], dtype=f"S{width}") for c in columns]
    return np.concatenate(keys) if keys else np.zeros(0, dtype="S1")


def patch(old: GraphData, store: Store) -> GraphData | None:
    """`old` brought up to what the index holds now by re-reading only the edges of the notes whose records
    changed (a watcher save, a small re-import), or None when a full build is the better way (more than a few
    notes changed, or the counts moved without any note record changing). Equals a full build."""
    started = time.perf_counter()
    token = store.read_token()
    notes = note_records(store, [*NOTE_FIELDS, "edge_ids"])
    old_meta = dict(zip(old.note_ids, old.note_meta, strict=True))
    digest, counts = index_digest(store, notes)
    if digest == old.digest:
        return replace(old, token=_still(store, token))
    before = {n: (fp, eh) for n, fp, eh in zip(old.note_ids, old.note_fps, old.note_ehs, strict=True)}
    now = {str(p.get("note_id", "")): p for p in notes}
    touched = {n for n, p in now.items() if before.get(n) != (str(p.get("fingerprint", "")),
                                                               str(p.get("edges_hash", "")))}
    touched |= set(before) - set(now)
    if not touched or len(touched) > max(PATCH_MIN, PATCH_SHARE * len(now)):
        return None
    node_of = {n: i for i, n in enumerate(old.nodes)}
    drop_nodes = np.array([node_of[n] for n in touched if n in node_of], dtype=np.int64)
    keep_rows = np.flatnonzero(~np.isin(old.edge_src, drop_nodes))
    new_ids = [point_id(e) for n in sorted(touched & set(now)) for e in now[n].get("edge_ids", [])]
    cols = edge_columns(r.payload for r in store.retrieve("edges", new_ids))
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
    fresh = {name: PackedStrings(*_pack(cols[name])) for name in EDGE_COLUMNS}
    rows = np.concatenate([keep_rows, len(old.edge_src) + np.arange(count, dtype=np.int64)])
    ids = _edge_id_keys([old.edge_columns["edge_id"], fresh["edge_id"]])[rows]
    strength = np.lexsort((ids, -conf)) if len(conf) else np.zeros(0, dtype=np.int64)
    packed = {name: take_strings([old.edge_columns[name], fresh[name]], rows[strength]) for name in EDGE_COLUMNS}
    src, dst, conf, kind = src[strength], dst[strength], conf[strength], kind[strength]
    in_deg, out_deg, pr_rel, linked = graph_figures(len(nodes), src, dst, conf)
    data = GraphData(
        digest=digest, note_ids=list(now), titles=[str(p.get("title", "")) for p in now.values()],
        note_fps=[str(p.get("fingerprint", "")) for p in now.values()],
        note_ehs=[str(p.get("edges_hash", "")) for p in now.values()],
        note_meta=[old_meta[n] if n in old_meta and n not in touched else note_meta(p) for n, p in now.items()],
        nodes=nodes, edge_src=src, edge_dst=dst,
        edge_conf=conf, edge_kind=kind, kinds=kinds, edge_columns=packed, in_degree=in_deg, out_degree=out_deg,
        pr_rel=pr_rel, linked=linked, counts=counts, token=_still(store, token))
    log.info("link graph patched: %d notes changed, %d edges read in %.2f s", len(touched), count,
             time.perf_counter() - started)
    return data


# ---------------------------------------------------------------------- the file

def graph_path(store: Store) -> Path | None:
    """`<index folder>/<prefix>.graph.npz` for an embedded index; None for a server."""
    return store.folder / f"{store.prefix}.graph.npz" if store.folder is not None else None


def _json_array(value: object) -> np.ndarray:
    return np.frombuffer(json.dumps(value, separators=(",", ":")).encode(), dtype=np.uint8).copy()


def save(data: GraphData, path: Path) -> None:
    meta = {"format": FORMAT, "digest": data.digest, "counts": data.counts, "kinds": data.kinds,
            "token": data.token, "created": time.time()}
    columns = {}
    for name, packed in data.edge_columns.items():
        columns[f"col_{name}_blob"] = np.frombuffer(packed.data, dtype=np.uint8)
        columns[f"col_{name}_offsets"] = packed.offsets
    arrays = {
        "meta": _json_array(meta),
        "strings": _json_array({"note_ids": data.note_ids, "titles": data.titles, "note_fps": data.note_fps,
                                "note_ehs": data.note_ehs, "note_meta": data.note_meta, "nodes": data.nodes}),
        "edge_src": data.edge_src, "edge_dst": data.edge_dst, "edge_conf": data.edge_conf,
        "edge_kind": data.edge_kind, **columns,
        "in_degree": data.in_degree, "out_degree": data.out_degree, "pr_rel": data.pr_rel, "linked": data.linked,
    }
    replace_atomically(path, lambda fh: np.savez(fh, **arrays))


def read_meta(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as f:
            return json.loads(f["meta"].tobytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise GraphFileError(f"{path}: unreadable graph file ({exc})") from exc


def load(path: Path) -> GraphData:
    """The graph in `path`; GraphFileError when it is missing, corrupt or of another format."""
    if not path.exists():
        raise GraphFileError(f"{path}: no graph file")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}     # reads every member: the zip CRC of each is checked
        meta = json.loads(arrays["meta"].tobytes())
        if meta.get("format") != FORMAT:
            raise GraphFormatError(f"{path}: graph format {meta.get('format')}, this mindnet reads {FORMAT}")
        s = json.loads(arrays["strings"].tobytes())
        data = GraphData(
            digest=meta["digest"], note_ids=s["note_ids"], titles=s["titles"], note_fps=s["note_fps"],
            note_ehs=s["note_ehs"], note_meta=s["note_meta"], nodes=s["nodes"], edge_src=arrays["edge_src"],
            edge_dst=arrays["edge_dst"],
            edge_conf=arrays["edge_conf"], edge_kind=arrays["edge_kind"], kinds=meta["kinds"],
            edge_columns={name: PackedStrings(arrays[f"col_{name}_blob"], arrays[f"col_{name}_offsets"])
                          for name in EDGE_COLUMNS},
            in_degree=arrays["in_degree"], out_degree=arrays["out_degree"], pr_rel=arrays["pr_rel"],
            linked=arrays["linked"], counts=meta["counts"], token=str(meta.get("token") or ""))
    except GraphFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise GraphFileError(f"{path}: corrupt graph file ({type(exc).__name__}: {exc})") from exc
    _validate(data, path)
    return data


def _validate(d: GraphData, path: Path) -> None:
    """Shapes and bounds agree (a file written by a buggy or foreign writer is not trusted)."""
    nodes, edges = len(d.nodes), len(d.edge_src)
    problems = []
    if not (len(d.edge_dst) == len(d.edge_conf) == len(d.edge_kind) == edges) \
            or any(len(c) != edges for c in d.edge_columns.values()):
        problems.append("edge columns differ in length")
    for name, c in d.edge_columns.items():
        if len(c.offsets) and (c.offsets[0] != 0 or np.any(np.diff(c.offsets) < 0) or c.offsets[-1] != len(c.data)):
            problems.append(f"edge column {name} out of shape")
    for name, arr in (("edge_src", d.edge_src), ("edge_dst", d.edge_dst)):
        if edges and (arr.min() < 0 or arr.max() >= nodes):
            problems.append(f"{name} out of bounds")
    if edges and (d.edge_kind.min() < 0 or d.edge_kind.max() >= len(d.kinds)):
        problems.append("edge kinds out of bounds")
    if any(len(a) != nodes for a in (d.in_degree, d.out_degree, d.pr_rel, d.linked)):
        problems.append("graph figures out of shape")
    if not (len(d.note_ids) == len(d.titles) == len(d.note_fps) == len(d.note_ehs) == len(d.note_meta)):
        problems.append("note columns differ in length")
    if problems:
        raise GraphFileError(f"{path}: inconsistent graph file: {'; '.join(problems)}")


# ---------------------------------------------------------------------- open: load if current, else rebuild

@dataclass
class Opened:
    data: GraphData
    status: str    # "current" | "loaded" | "patched" | "built" | "rebuilt (missing|stale|other format|corrupt: ..)"
    seconds: float


_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], GraphData] = {}     # (folder or store, prefix) -> the last graph seen


def _cache_key(store: Store) -> tuple[str, str]:
    path = graph_path(store)
    return (str(path) if path else f"store-{id(store)}", store.prefix)


def open_graph(store: Store, *, write: bool = True) -> Opened:
    """The current graph: this process's last one or the file when the index's token vouches for it (one small
    read) or its digest matches the index (a read of every note record), else patched or rebuilt from the
    edges collection (and written, with `write`, for an embedded index)."""
    started = time.perf_counter()
    token = store.read_token()
    key = _cache_key(store)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and token and cached.token == token:
        return Opened(cached, "current", time.perf_counter() - started)
    path = graph_path(store)
    status = "built"
    loaded = None
    if path is not None and cached is None:
        try:
            loaded = load(path)
        except GraphFormatError:
            status = "rebuilt (other format)"
        except GraphFileError as exc:
            status = "rebuilt (missing)" if not path.exists() else f"rebuilt (corrupt: {exc})"
        if loaded is not None and token and loaded.token == token:
            return _keep(key, loaded, "loaded", started)
    stale = cached if cached is not None else loaded
    data = None
    if stale is not None:
        digest, _ = index_digest(store)
        if stale.digest == digest:       # the same, written without a token (an import was running then)
            fresh = replace(stale, token=_still(store, token))
            if path is not None and write and fresh.token and fresh.token != stale.token:
                _save_quietly(fresh, path)
            return _keep(key, fresh, "current" if stale is cached else "loaded", started)
        status = "rebuilt (stale)"
        data = patch(stale, store)
        status = "patched" if data is not None else "rebuilt (stale)"
    if data is None:
        data = build(store)
    if path is not None and write:
        _save_quietly(data, path)
    if status != "built":
        log.info("graph file %s: %s", path, status)
    return _keep(key, data, status, started)


def _keep(key: tuple[str, str], data: GraphData, status: str, started: float) -> Opened:
    with _cache_lock:
        _cache[key] = data
    return Opened(data, status, time.perf_counter() - started)


def _save_quietly(data: GraphData, path: Path) -> None:
    try:
        save(data, path)
    except OSError as exc:   # a read-only or full disk: the graph still works, the next start rebuilds
        log.warning("cannot write the graph file %s: %s", path, exc)


def graph_status(store: Store) -> str:
    """What opening would do, without building: current | stale | missing | corrupt | none (a server)."""
    path = graph_path(store)
    if path is None:
        return "none"
    if not path.exists():
        return "missing"
    try:
        meta = read_meta(path)
    except GraphFileError:
        return "corrupt"
    if meta.get("format") != FORMAT:
        return "stale"
    token = store.read_token()
    if token and meta.get("token") == token:
        return "current"
    return "current" if meta.get("digest") == index_digest(store)[0] else "stale"


def forget(store: Store) -> None:
    """Drop this process's cached graph for the index (tests; a dropped collection)."""
    with _cache_lock:
        _cache.pop(_cache_key(store), None)
