"""Graph adapter: the subgraph around the hits, loaded from `<prefix>_edges` into networkx.

The graph is kept at note level: a link edge goes from the note whose chunk holds the link to the note it
names. Both bonuses are on an absolute scale (nothing is normalised to the best note of the subgraph) and damp
hubs with the vault-wide figures of `GraphStats`:

    spec(k)  = min(1, sqrt(hub_degree / k))            specificity of a note with k distinct links (1 = not a hub)
    B_edge   = min(1, max(0, sum over seed notes s linking to n of conf(s, n) * rel(s) * spec(out(s))
                             - chance * K * in(n) / N) * spec(in(n)))     (K seeds, N notes in the vault)
               rel(s) = s's semantic score / the best seed's: a link from a weak hit counts less; one specific
               link from the best hit is full evidence (1);
               K * in(n) / N = the seeds expected to link to n by chance, subtracted with weight `chance`
               (retriever.yaml graph.chance; 0 by default, as measured)
    B_cent   = share(n) * min(1, 1 / pr_rel(n))
               share(n) = the part of a personalised PageRank walk (restarting at the seeds by relevance, edges
               weighted by confidence x spec(out(source))) that arrives at n over a link: 0..1
               pr_rel(n) = n's PageRank in the vault's whole link graph x its number of notes (1 = average);
               a note that is central everywhere gets only what it gets beyond its usual share.

The vault-wide figures (`GraphStats`) and the walk shares (`link_flow`) are in `graph_stats.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from mindnet.retrieval.graph_file import GraphData, graph_figures
from mindnet.retrieval.graph_stats import STRUCTURAL, GraphStats, link_flow, note_of, personalized_pagerank, specificity
from mindnet.store.collections import edge_as, kind_label, label_kinds

# moved to graph_stats.py; imported from here by the retriever, the agents and the tests
__all__ = ["STRUCTURAL", "EdgeIndex", "FanOut", "GraphStats", "LinkGraph", "Subgraph", "expand", "link_flow",
           "note_of", "personalized_pagerank", "specificity"]


@dataclass
class Subgraph:
    seeds: dict[str, float]                       # seed note id -> weight (its best semantic score)
    graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    stats: GraphStats = field(default_factory=GraphStats.empty)
    _pagerank: dict[str, float] | None = None
    _ends: tuple[dict, dict, int] | None = None
    _memo: dict = field(default_factory=dict)     # per-query results of the pure helpers below (linkers, ...)
    _edge_list: list[dict] = field(default_factory=list)
    # edges picked from an EdgeIndex, as (index, rows in load order, kinds): their payloads are decoded only
    # when asked for (explanations ask for the few notes shown; `edges` decodes them all)
    _rows: tuple[EdgeIndex, np.ndarray, list[str]] | None = None

    @property
    def edges(self) -> list[dict]:
        """The edge payloads loaded, in load order (as the wanted kinds)."""
        if self._rows is not None:
            index, rows, kinds = self._rows
            self._rows = None
            self._edge_list = self._edge_list + index.shown_as(rows.tolist(), kinds)
        return self._edge_list

    @edges.setter
    def edges(self, value: list[dict]) -> None:
        _ = self.edges
        self._edge_list = value

    def add_rows(self, index: EdgeIndex, rows: np.ndarray, kinds: list[str]) -> None:
        """Edges of `index` (rows, in load order) shown as `kinds`, decoded lazily."""
        if self._edge_list:
            self._edge_list += index.shown_as(rows.tolist(), kinds)
        elif self._rows is None:
            self._rows = (index, rows, kinds)
        else:
            self._rows = (index, np.concatenate([self._rows[1], rows]), kinds)

    @property
    def notes(self) -> set[str]:
        return set(self.graph.nodes)

    def incoming(self, note_id: str) -> list[dict]:
        if self._rows is not None:
            return self._rows_around(note_id, 0)
        return self._by_end()[0].get(note_id, [])

    def outgoing(self, note_id: str) -> list[dict]:
        if self._rows is not None:
            return self._rows_around(note_id, 1)
        return self._by_end()[1].get(note_id, [])

    def _rows_around(self, note_id: str, end: int) -> list[dict]:
        """`incoming` (end 0) or `outgoing` (end 1) from the undecoded rows: the same edges in the same order
        (an EdgeIndex holds no edge from a note to itself)."""
        assert self._rows is not None
        index, rows, kinds = self._rows
        i = index.node_of.get(note_id)
        if i is None:
            return []
        side = index.dst if end == 0 else index.src
        return index.shown_as(rows[side[rows] == i].tolist(), kinds)

    def _by_end(self) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
        """Edges grouped by target note and by source note, built once (explanations ask per hit)."""
        if self._ends is None or self._ends[2] != len(self.edges):
            into: dict[str, list[dict]] = {}
            out: dict[str, list[dict]] = {}
            for e in self.edges:
                src, dst = e["note_id"], note_of(e["target_id"])
                if src != dst:
                    into.setdefault(dst, []).append(e)
                    out.setdefault(src, []).append(e)
            self._ends = (into, out, len(self.edges))
        return self._ends[0], self._ends[1]

    def relevance(self, seed: str) -> float:
        """A seed's weight relative to the best seed (0..1)."""
        top = self._memo.get("top")
        if top is None:
            top = self._memo["top"] = max(self.seeds.values(), default=0.0)
        return min(1.0, max(0.0, self.seeds.get(seed, 0.0) / top)) if top > 0 else 1.0

    def sources(self, note_id: str) -> dict[str, float]:
        """The notes linking to `note_id` in the subgraph, each with its link's confidence. Read from the graph
        once per query into plain dicts: scoring asks for every candidate (a networkx edge view per call cost
        more than the rest of the formula)."""
        into = self._memo.get("into")
        if into is None:
            into = self._memo["into"] = {}
            for src, dst, conf in self.graph.edges(data="confidence"):
                into.setdefault(dst, {})[src] = conf
        return into.get(note_id, {})

    def linkers(self, note_id: str) -> list[str]:
        """Seed notes with some relevance and a link into `note_id`, most relevant first (a new list)."""
        key = ("linkers", note_id)
        found = self._memo.get(key)
        if found is None:
            seeds = self.seeds
            found = self._memo[key] = sorted((src for src in self.sources(note_id)
                                              if src != note_id and seeds.get(src, 0.0) > 0),
                                             key=lambda s: (-seeds[s], s))
        return list(found)

    def edge_bonus(self, note_id: str) -> float:
        """B_edge (see the module docstring): each linking seed counts once, by its strongest edge, weighted by
        its relevance and by the specificity of both ends, minus `chance` x what chance gives a note that
        in(n) of the vault's N notes link to (K seeds x in(n) / N); at most 1. One specific link from the best
        hit is full evidence (1.0); a link from a hub or into a hub counts less."""
        into = self.sources(note_id)    # most candidates: nothing in the subgraph links to them
        if not into or not self.seeds:
            return 0.0
        linkers = self.linkers(note_id)
        if not linkers:         # nothing to count, nothing to subtract from (chance >= 0)
            return 0.0
        total = sum(min(1.0, into[s]) * self.relevance(s) * self.stats.spec_out(s) for s in linkers)
        spec_in = self.stats.spec_in(note_id)
        return min(1.0, max(0.0, total - self.stats.chance * self.expected_linkers(note_id)) * spec_in)

    @property
    def relevant_seeds(self) -> int:
        """K: the seeds with some semantic evidence (a seed scoring 0 is no hit)."""
        if "k" not in self._memo:
            self._memo["k"] = max(1, sum(w > 0 for w in self.seeds.values()))
        return self._memo["k"]

    def expected_linkers(self, note_id: str) -> float:
        """How many of the seeds would link here by chance: K x the share of all notes that link here."""
        notes = max(self.stats.notes, 1)
        return self.relevant_seeds * self.stats.in_degree.get(note_id, 0) / notes

    def centrality_bonus(self, note_id: str) -> float:
        """B_cent (see the module docstring): the share of the seeds' walk reaching the note over links, damped by
        the note's global centrality (0..1)."""
        if self._pagerank is None:
            self._pagerank = link_flow(self.graph, {s: self.relevance(s) for s in self.seeds}, self.stats)
        flow = self._pagerank.get(note_id)
        return flow * self.stats.hub_damping(note_id) if flow else 0.0


@dataclass(frozen=True)
class FanOut:
    """Bounds on what an expansion loads, by edge strength (confidence, then edge id for a stable order):
    each note of a hop's frontier contributes its `per_note` strongest links (in and out), and a query keeps
    at most `per_query` edges over all hops (nearer hops first)."""

    per_note: int | None = None
    per_query: int | None = None

    @classmethod
    def unbounded(cls) -> FanOut:
        return cls()


def _strength(e: dict) -> tuple[float, str]:
    return (-float(e.get("confidence", 1.0)), str(e.get("edge_id", "")))


class EdgeIndex:
    """The resolved links between different notes as CSR adjacency by note index: for each note its outgoing
    and its incoming edge rows, strongest first, so an expansion takes a slice per frontier note and caps it
    without sorting. Built from the link graph (`from_data`, `mindnet.retrieval.graph_file`) or from edge payloads
    (`EdgeIndex(edges)`). Reading a hop's edges from the edges collection by a filter costs tens of milliseconds
    per hop at 970,000 edges; here it is an array lookup.
    """

    def __init__(self, edges: Iterable[dict]) -> None:
        raw = [e for e in edges if e.get("kind") not in STRUCTURAL and e.get("resolved", True)
               and e["note_id"] != note_of(e["target_id"])]
        raw.sort(key=_strength)
        nodes = list(dict.fromkeys([*(e["note_id"] for e in raw), *(note_of(e["target_id"]) for e in raw)]))
        node_of = {n: i for i, n in enumerate(nodes)}
        kinds = sorted({kind_label(e) for e in raw})     # an edge's kind and its merged default kinds
        kind_of = {k: i for i, k in enumerate(kinds)}
        self._setup(nodes, np.array([node_of[e["note_id"]] for e in raw], dtype=np.int32),
                    np.array([node_of[note_of(e["target_id"])] for e in raw], dtype=np.int32),
                    np.array([float(e.get("confidence", 1.0)) for e in raw], dtype=np.float64),
                    np.array([kind_of[kind_label(e)] for e in raw], dtype=np.int16), kinds, raw.__getitem__)

    @classmethod
    def from_data(cls, data: GraphData) -> EdgeIndex:
        index = cls.__new__(cls)
        index._setup(data.nodes, data.edge_src, data.edge_dst, data.edge_conf, data.edge_kind, data.kinds,
                     data.edge_payload)
        return index

    def _setup(self, nodes: list[str], src: np.ndarray, dst: np.ndarray, conf: np.ndarray, kind: np.ndarray,
               kinds: list[str], payload: Callable[[int], dict]) -> None:
        """Edge rows are ordered strongest first; a stable sort by end keeps that order inside each slice."""
        self.nodes = nodes
        self.node_of = {n: i for i, n in enumerate(nodes)}
        self.src, self.dst, self.conf, self.kind, self.kinds = src, dst, conf, kind, kinds
        self._payload = payload
        self._payloads: dict[int, dict] = {}
        self.size = len(src)
        n = len(nodes)
        self.out_rows = np.argsort(src, kind="stable").astype(np.int64)
        self.in_rows = np.argsort(dst, kind="stable").astype(np.int64)
        self.out_ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))]).astype(np.int64)
        self.in_ptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=n))]).astype(np.int64)
        self._kind_masks: dict[tuple[str, ...], np.ndarray] = {}
        self._own_kind_ok: dict[tuple[str, ...], np.ndarray] = {}

    def graph_stats(self, note_count: int, hub_degree: float, chance: float = 0.0) -> GraphStats:
        """Degrees and global PageRank of these edges (an index built from payloads, in tests)."""
        in_deg, out_deg, pr_rel, linked = graph_figures(len(self.nodes), self.src, self.dst, self.conf)
        stats = GraphStats.__new__(GraphStats)
        keep = np.flatnonzero(linked)
        stats._set([self.nodes[i] for i in keep.tolist()], in_deg[keep], out_deg[keep], pr_rel[keep],
                   max(note_count, len(keep)), hub_degree, chance)
        return stats

    def payload(self, row: int) -> dict:
        if row not in self._payloads:
            if len(self._payloads) >= 50_000:     # decoded on demand; keep the memory bounded
                self._payloads.clear()
            self._payloads[row] = self._payload(row)
        return self._payloads[row]

    def _kind_mask(self, edge_types: Iterable[str]) -> np.ndarray:
        key = tuple(sorted(set(edge_types)))
        if key not in self._kind_masks:
            wanted = np.zeros(len(self.kinds) + 1, dtype=bool)
            # a row's label lists its kind and the type default kinds it carries ("references+related_to")
            wanted[[i for i, k in enumerate(self.kinds) if any(part in key for part in label_kinds(k))]] = True
            if len(self._kind_masks) >= 8:
                self._kind_masks.clear()
            self._kind_masks[key] = wanted[self.kind] if self.size else np.zeros(0, dtype=bool)
        return self._kind_masks[key]

    def rows_around(self, note: str, ok: np.ndarray, per_note: int | None) -> np.ndarray:
        """The note's edge rows (in and out) of the wanted kinds, strongest first, at most `per_note`."""
        i = self.node_of.get(note)
        if i is None:
            return np.zeros(0, dtype=np.int64)
        rows = np.concatenate([self.out_rows[self.out_ptr[i]:self.out_ptr[i + 1]],
                               self.in_rows[self.in_ptr[i]:self.in_ptr[i + 1]]])
        rows = np.sort(rows[ok[rows]])          # row order is strength order
        return rows if per_note is None else rows[:per_note]

    def hop(self, frontier: list[str], edge_types: list[str], caps: FanOut, budget: int | None,
            seen: set[int]) -> np.ndarray:
        """Edge rows of one hop, capped per note and by the budget left, strongest first (see `FanOut`)."""
        ok = self._kind_mask(edge_types)
        parts = [self.rows_around(n, ok, caps.per_note) for n in frontier]
        rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
        if seen:
            rows = rows[~np.isin(rows, np.fromiter(seen, dtype=np.int64, count=len(seen)))]
        return rows if budget is None else rows[: max(0, budget)]

    def edges_for(self, frontier: list[str], edge_types: list[str]) -> list[dict]:
        """Every edge payload touching the frontier notes (uncapped), each shown as a wanted kind."""
        ok = self._kind_mask(edge_types)
        rows = np.unique(np.concatenate([self.rows_around(n, ok, None) for n in frontier])) if frontier else []
        return self.shown_as([int(r) for r in rows], edge_types)

    def shown_confidence(self, rows: np.ndarray, edge_types: list[str]) -> list[float]:
        """The confidence each of `rows` shows as the wanted kinds (`shown_as(rows)[i]["confidence"]`): its own
        when its kind is wanted, else (matched by a merged default kind) the default's, read from its payload."""
        key = tuple(sorted(set(edge_types)))
        own = self._own_kind_ok.get(key)
        if own is None:
            own = np.array([label_kinds(k)[0] in key for k in self.kinds] + [False], dtype=bool)
            if len(self._own_kind_ok) >= 8:
                self._own_kind_ok.clear()
            self._own_kind_ok[key] = own
        conf = self.conf[rows].tolist()
        for i in np.flatnonzero(~own[self.kind[rows]]).tolist():
            conf[i] = float(self.shown_as([int(rows[i])], edge_types)[0]["confidence"])
        return conf

    def shown_as(self, rows: list[int], edge_types: Iterable[str]) -> list[dict]:
        """The payloads of `rows` as the wanted kinds: an edge matched only by a type default kind it carries
        shows as that kind, with the default's rule and confidence (`store.collections.edge_as`)."""
        wanted = set(edge_types)
        return [v for r in rows if (v := edge_as(self.payload(r), wanted)) is not None]


def expand(edge_index: EdgeIndex, seed_ids: Iterable[str], depth: int, edge_types: list[str],
           seed_weights: dict[str, float] | None = None, stats: GraphStats | None = None,
           caps: FanOut | None = None) -> Subgraph:
    """Load the subgraph `depth` hops around the seeds (chunk ids or note ids) over `edge_types` from
    `edge_index`, bounded by `caps`."""
    seed_notes: dict[str, float] = {}
    for sid in seed_ids:
        note = note_of(sid)
        weight = (seed_weights or {}).get(sid, 1.0)
        seed_notes[note] = max(seed_notes.get(note, 0.0), weight)
    sub = Subgraph(seeds=seed_notes, stats=stats or GraphStats.empty())
    sub.graph.add_nodes_from(seed_notes)
    kinds = [k for k in edge_types if k not in STRUCTURAL]
    if depth <= 0 or not kinds or not seed_notes:
        return sub
    caps = caps or FanOut.unbounded()
    visited: set[str] = set()
    frontier = sorted(seed_notes)
    seen_rows: set[int] = set()
    strongest: dict[tuple[str, str], float] = {}
    count = 0
    for _ in range(depth):
        visited.update(frontier)
        budget = None if caps.per_query is None else caps.per_query - count
        rows = edge_index.hop(frontier, kinds, caps, budget, seen_rows)
        seen_rows.update(rows.tolist())
        # a default kind shows with its own confidence; payloads are decoded when asked for
        hop = list(zip([edge_index.nodes[s] for s in edge_index.src[rows].tolist()],
                       [edge_index.nodes[d] for d in edge_index.dst[rows].tolist()],
                       edge_index.shown_confidence(rows, kinds), strict=True))
        sub.add_rows(edge_index, rows, kinds)
        count += len(hop)
        found: set[str] = set()
        for src, dst, conf in hop:       # several links between two notes: the strongest counts
            if strongest.get((src, dst), -math.inf) < conf:
                strongest[(src, dst)] = conf
            found.update((src, dst))
        frontier = sorted(found - visited)
        if not frontier or (budget is not None and len(hop) >= budget):
            break
    sub.graph.add_weighted_edges_from(((s, d, c) for (s, d), c in strongest.items()), weight="confidence")
    return sub


@dataclass
class LinkGraph:
    """What a search needs of the graph: the adjacency, the vault-wide figures, every note's title, and for a note
    the graph reaches its chunks and the fields ranking needs (so scoring it reads no payload)."""

    index: EdgeIndex
    stats: GraphStats
    titles: dict[str, str]
    notes: dict[str, dict] = field(default_factory=dict)      # note id -> its meta (graph_file.note_meta)
    _chunk_at: dict[str, tuple[str, str]] = field(init=False, repr=False)      # point id -> (note, chunk)

    @classmethod
    def from_data(cls, data: GraphData, hub_degree: float = 10.0, chance: float = 0.0) -> LinkGraph:
        notes = dict(zip(data.note_ids, data.note_meta, strict=True))
        return cls(EdgeIndex.from_data(data), GraphStats.from_data(data, hub_degree, chance),
                   dict(zip(data.note_ids, data.titles, strict=True)), notes)

    def __post_init__(self) -> None:
        # built with the graph, so that it is frozen with it (GraphSearch._link_graph): ~75,000 chunks at 30,000
        # notes, tens of ms; the full collections a query's allocations start then do not walk it
        self._chunk_at = {pid: (nid, cid) for nid, meta in self.notes.items() for cid, pid in meta["chunks"]}

    def locate(self, point_id: str) -> tuple[str, str] | None:
        """(note id, chunk id) of a chunk by its point id; None for a chunk the graph does not list."""
        return self._chunk_at.get(point_id)

    def brief_of(self, point_id: str) -> dict | None:
        """`brief_payload` of a chunk by its point id; None for a chunk the graph does not list (written after
        it was built)."""
        at = self.locate(point_id)
        return self.brief_payload(*at) if at is not None else None

    def brief_payload(self, note_id: str, chunk_id: str) -> dict:
        """A chunk's ranking fields (what `collections.BRIEF_FIELDS` reads from its payload): its note's."""
        meta = self.notes[note_id]
        return {"chunk_id": chunk_id, "note_id": note_id, "title": self.titles.get(note_id, ""),
                "type": meta["type"], "path": meta["path"], "tags": meta["tags"],
                "retriever_weight": meta["retriever_weight"], "lang": meta["lang"]}
