"""The link graph as compact arrays, kept in memory beside the engine and, for an embedded index, as a file.

Graph expansion reads the links around a query's hits several times per query. Reading them from the edges
collection by a keyword filter costs 38-67 ms for 20 notes at 970,000 edge points (measured with Qdrant Edge);
a CSR adjacency in memory answers in microseconds. So the resolved links between different notes, their
payloads (for explanations), the note titles and the vault-wide figures (in/out degrees, global PageRank) are
held as numpy arrays (`GraphData`, in `graph_arrays.py`), built from the edges collection in one pass and
kept as one file beside the shards:

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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mindnet.errors import StoreError
from mindnet.retrieval.graph_arrays import (
    EDGE_COLUMNS,
    STRUCTURAL,
    GraphData,
    PackedStrings,
    collector_paused,
    edge_columns,
    graph_figures,
    note_of,
    pack,
    pagerank,
    permute,
    take_strings,
)
from mindnet.store.collections import point_id
from mindnet.store.engine import Store, Where
from mindnet.store.folder import replace_atomically

# moved to graph_arrays.py; imported from here by graph.py and the tests
__all__ = ["EDGE_COLUMNS", "FORMAT", "STRUCTURAL", "GraphData", "GraphFileError", "GraphFormatError", "Opened",
           "PackedStrings", "build", "edge_columns", "forget", "graph_figures", "graph_path", "graph_status", "load",
           "note_meta", "note_of", "open_graph", "pagerank", "patch", "read_meta", "save", "take_strings"]

log = logging.getLogger(__name__)
FORMAT = 5                          # bump when the arrays change shape or meaning (5: the notes' chunks and fields)
# what a note record tells the graph: identity and version, and what ranking needs of a note the graph reaches
# (every chunk of a note carries the same values)
NOTE_FIELDS = ["note_id", "title", "fingerprint", "edges_hash", "chunk_ids", "type", "path", "tags",
               "retriever_weight", "lang"]
STAMP = ["note_id", "fingerprint", "edges_hash"]    # what says a note changed: the digest reads only these
# the links of the graph: edges that are not the structure inside a note (unresolved ones are dropped while
# reading: qdrant-edge-py 0.9 passes a boolean match value as the integer 1, which no boolean field matches)
LINKS = Where(exclude=(("kind", STRUCTURAL),))
PATCH_SHARE, PATCH_MIN = 0.05, 50   # patch when at most this share of the notes changed (and at least 50 notes)


class GraphFileError(StoreError):
    """A graph file that cannot be used (unreadable, corrupt, other format); it is rebuilt."""


class GraphFormatError(GraphFileError):
    """A graph file written in another format (another mindnet version)."""


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
    payloads = notes if notes is not None else note_records(store, STAMP)
    lines = sorted(f"{p.get('note_id')}\t{p.get('fingerprint')}\t{p.get('edges_hash')}\n" for p in payloads)
    counts = {kind: (store.count(kind) if store.exists(kind) else -1) for kind in ("notes", "edges")}
    h = hashlib.sha256(f"format {FORMAT}\n{json.dumps(counts, sort_keys=True)}\n".encode())
    h.update("".join(lines).encode())
    return h.hexdigest(), counts


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
    packed = {name: PackedStrings(*permute(*pack(cols[name]), order)) for name in EDGE_COLUMNS}
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


def patch(old: GraphData, store: Store, read: tuple[str | None, list[dict]] | None = None) -> GraphData | None:
    """`old` brought up to what the index holds now by re-reading only the edges of the notes whose records
    changed (a watcher save, a small re-import), or None when a full build is the better way (more than a few
    notes changed, or the counts moved without any note record changing). Equals a full build. `read`: the
    index's token and every note's stamp, read by the caller in that order; whole records: changed notes only."""
    started = time.perf_counter()
    token, stamps = read if read is not None else (store.read_token(), note_records(store, STAMP))
    digest, counts = index_digest(store, stamps)
    if digest == old.digest:
        return replace(old, token=_still(store, token))
    before = {n: (fp, eh) for n, fp, eh in zip(old.note_ids, old.note_fps, old.note_ehs, strict=True)}
    now = {str(p.get("note_id", "")): p for p in stamps}
    touched = {n for n, p in now.items() if before.get(n) != (str(p.get("fingerprint", "")),
                                                               str(p.get("edges_hash", "")))}
    touched |= set(before) - set(now)
    if not touched or len(touched) > max(PATCH_MIN, PATCH_SHARE * len(now)):
        return None
    kept = {n: (t, m) for n, t, m in zip(old.note_ids, old.titles, old.note_meta, strict=True)}
    records = {str(r.payload.get("note_id")): r.payload for r in store.retrieve(
        "notes", [point_id(n) for n in sorted(touched & now.keys())], payload=[*NOTE_FIELDS, "edge_ids"])}
    if records.keys() != touched & now.keys():
        return None                         # a record went meanwhile: built whole
    now.update(records)
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
    fresh = {name: PackedStrings(*pack(cols[name])) for name in EDGE_COLUMNS}
    rows = np.concatenate([keep_rows, len(old.edge_src) + np.arange(count, dtype=np.int64)])
    ids = _edge_id_keys([old.edge_columns["edge_id"], fresh["edge_id"]])[rows]
    strength = np.lexsort((ids, -conf)) if len(conf) else np.zeros(0, dtype=np.int64)
    packed = {name: take_strings([old.edge_columns[name], fresh[name]], rows[strength]) for name in EDGE_COLUMNS}
    src, dst, conf, kind = src[strength], dst[strength], conf[strength], kind[strength]
    in_deg, out_deg, pr_rel, linked = graph_figures(len(nodes), src, dst, conf)
    data = GraphData(
        digest=digest, note_ids=list(now), note_fps=[str(p.get("fingerprint", "")) for p in now.values()],
        titles=[kept[n][0] if n not in touched else str(p.get("title", "")) for n, p in now.items()],
        note_ehs=[str(p.get("edges_hash", "")) for p in now.values()],
        note_meta=[kept[n][1] if n not in touched else note_meta(p) for n, p in now.items()],
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
    columns = {f"col_{name}_{part}": array for name, packed in data.edge_columns.items()
               for part, array in (("blob", np.frombuffer(packed.data, dtype=np.uint8)), ("offsets", packed.offsets))}
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


@collector_paused()
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
            note_ehs=s["note_ehs"], note_meta=s["note_meta"], nodes=s["nodes"], kinds=meta["kinds"],
            edge_src=arrays["edge_src"], edge_dst=arrays["edge_dst"], edge_conf=arrays["edge_conf"],
            edge_kind=arrays["edge_kind"],
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
        digest, _ = index_digest(store, stamps := note_records(store, STAMP))    # read once, for patch too
        if stale.digest == digest:       # the same, written without a token (an import was running then)
            fresh = replace(stale, token=_still(store, token))
            if path is not None and write and fresh.token and fresh.token != stale.token:
                _save_quietly(fresh, path)
            return _keep(key, fresh, "current" if stale is cached else "loaded", started)
        status = "rebuilt (stale)"
        data = patch(stale, store, (token, stamps))
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
