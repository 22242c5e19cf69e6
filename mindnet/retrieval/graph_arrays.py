"""The link graph's arrays (`GraphData`): the notes, the resolved links between different notes as a CSR-ready
edge list with their payload columns as packed strings, and the vault-wide figures (degrees, global PageRank).

Pure numpy: reading them from the index, versioning them and their file are `graph_file.py`'s.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from mindnet.store.collections import kind_label, label_kinds

log = logging.getLogger(__name__)
STRUCTURAL = ("belongs_to", "next", "prev")
EDGE_COLUMNS = ("edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "extra")
_KNOWN = {"edge_id", "source_id", "target_id", "rule_id", "scope", "target_text", "kind", "kinds", "confidence",
          "note_id", "resolved"}


def note_of(node_id: str) -> str:
    head, sep, tail = node_id.rpartition("#c")
    return head if head and sep and len(tail) >= 2 and tail.isascii() and tail.isdigit() else node_id


# ---------------------------------------------------------------------- strings as one blob + offsets

def pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    joined = "".join(strings)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    if joined.isascii():     # one byte per character: offsets from the lengths, one encode for all
        np.cumsum(np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)), out=offsets[1:])
        return np.frombuffer(joined.encode(), dtype=np.uint8).copy(), offsets
    encoded = [s.encode() for s in strings]
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def permute(blob: np.ndarray, offsets: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    if n == 0:
        return np.zeros(0)
    out_weight = np.bincount(src, weights=weight, minlength=n)
    scale = np.divide(1.0, out_weight, out=np.zeros(n), where=out_weight != 0)
    # x @ P as P^T x: the edges sorted by (target, source), each target's terms added one after another in that
    # order (bincount), as a CSR matrix-vector product adds them; numpy only (scipy cost the first search 0.35 s)
    order = np.lexsort((src, dst))
    rows, cols, values = dst[order], src[order], (weight * scale[src])[order]
    p = np.full(n, 1.0 / n) if personalization is None else personalization / personalization.sum()
    dangling = np.flatnonzero(out_weight == 0)
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        last = x
        x = alpha * (np.bincount(rows, weights=values * last[cols], minlength=n) + last[dangling].sum() * p) \
            + (1 - alpha) * p
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


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection meanwhile: reading a graph makes ~10^5-10^6 long-lived objects (lists, dicts), and
    the collections their allocation triggers walked all of them again and again (at 30,000 notes the load took
    1.9-3.1 s with the collector off, 3.8-5.0 s with it on, load 9-12); nothing read here is cyclic garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
