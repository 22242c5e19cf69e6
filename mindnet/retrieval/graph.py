"""Graph adapter: the subgraph around the hits, loaded from `<prefix>_edges` into networkx.

The graph is kept at note level: a link edge goes from the note whose chunk holds the link to the note it
names. Both bonuses are on an absolute scale (nothing is normalised to the best note of the subgraph) and damp
hubs with the vault-wide figures of `GraphStats`:

    spec(k)  = min(1, sqrt(hub_degree / k))            specificity of a note with k distinct links (1 = not a hub)
    B_edge   = max(0, sum over seed notes s linking to n of conf(s, n) * rel(s) * spec(out(s))
                      - K * in(n) / N) * spec(in(n)) / K           (K seeds, N notes in the vault)
               rel(s) = s's semantic score / the best seed's: a link from a weak hit counts less;
               K * in(n) / N = the seeds expected to link to n by chance (a hub linked by half the vault
               gets nothing for being linked by half the hits)
    B_cent   = share(n) * min(1, 1 / pr_rel(n))
               share(n) = the part of a personalised PageRank walk (restarting at the seeds by relevance, edges
               weighted by confidence x spec(out(source))) that arrives at n over a link: 0..1
               pr_rel(n) = n's PageRank in the vault's whole link graph x its number of notes (1 = average);
               a note that is central everywhere gets only what it gets beyond its usual share.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.store.collections import edge_as, kind_filter, names, scroll_points

CHUNK_ID = re.compile(r"^(?P<note>.+)#c\d{2,}$")
STRUCTURAL = {"belongs_to", "next", "prev"}


def note_of(node_id: str) -> str:
    m = CHUNK_ID.match(node_id)
    return m.group("note") if m else node_id


def specificity(degree: int, hub_degree: float) -> float:
    """1 for a note with at most `hub_degree` distinct links, then falling as sqrt(hub_degree / degree)."""
    return 1.0 if degree <= hub_degree else math.sqrt(hub_degree / degree)


class GraphStats:
    """Vault-wide link figures per note: distinct in/out neighbours and global PageRank relative to an average
    note. Computed in one place from all edges (today when the retriever first needs them after an import;
    the import could compute and store them instead)."""

    def __init__(self, edges: Iterable[dict], note_count: int = 0, *, hub_degree: float = 10.0) -> None:
        graph = nx.DiGraph()
        for e in edges:
            src, dst = e["note_id"], note_of(e["target_id"])
            if src != dst and e.get("kind") not in STRUCTURAL and e.get("resolved", True):
                conf = float(e.get("confidence", 1.0))
                if not graph.has_edge(src, dst) or graph[src][dst]["confidence"] < conf:
                    graph.add_edge(src, dst, confidence=conf)
        self.hub_degree = hub_degree
        self.in_degree: dict[str, int] = dict(graph.in_degree())
        self.out_degree: dict[str, int] = dict(graph.out_degree())
        self.notes = max(note_count, graph.number_of_nodes())
        self.pr_rel: dict[str, float] = {}
        if graph.number_of_edges():
            ranks = nx.pagerank(graph, alpha=0.85, weight="confidence", max_iter=200, tol=1e-8)
            linked = graph.number_of_nodes()   # 1.0 = the average note of the link graph
            self.pr_rel = {n: r * linked for n, r in ranks.items()}

    @classmethod
    def empty(cls, hub_degree: float = 10.0) -> GraphStats:
        return cls([], hub_degree=hub_degree)

    def spec_in(self, note_id: str) -> float:
        return specificity(self.in_degree.get(note_id, 0), self.hub_degree)

    def spec_out(self, note_id: str) -> float:
        return specificity(self.out_degree.get(note_id, 0), self.hub_degree)

    def hub_damping(self, note_id: str) -> float:
        """min(1, 1 / relative global PageRank): 1 for a note no more central than the average linked note."""
        rel = self.pr_rel.get(note_id, 0.0)
        return 1.0 if rel <= 1.0 else 1.0 / rel


@dataclass
class Subgraph:
    seeds: dict[str, float]                       # seed note id -> weight (its best semantic score)
    graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    edges: list[dict] = field(default_factory=list)   # the raw edge payloads loaded
    stats: GraphStats = field(default_factory=GraphStats.empty)
    _pagerank: dict[str, float] | None = None
    _ends: tuple[dict, dict, int] | None = None

    @property
    def notes(self) -> set[str]:
        return set(self.graph.nodes)

    def incoming(self, note_id: str) -> list[dict]:
        return self._by_end()[0].get(note_id, [])

    def outgoing(self, note_id: str) -> list[dict]:
        return self._by_end()[1].get(note_id, [])

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
        top = max(self.seeds.values(), default=0.0)
        return min(1.0, max(0.0, self.seeds.get(seed, 0.0) / top)) if top > 0 else 1.0

    def linkers(self, note_id: str) -> list[str]:
        """Seed notes with some relevance and a link into `note_id`, most relevant first."""
        if note_id not in self.graph:
            return []
        found = {src for src, _ in self.graph.in_edges(note_id)
                 if self.seeds.get(src, 0.0) > 0 and src != note_id}
        return sorted(found, key=lambda s: (-self.seeds[s], s))

    def edge_bonus(self, note_id: str) -> float:
        """B_edge (see the module docstring): each linking seed counts once, by its strongest edge, weighted by
        its relevance and by the specificity of both ends, minus what chance gives a note that in(n) of the
        vault's N notes link to (K seeds x in(n) / N); divided by the number of seeds K (0..1)."""
        if note_id not in self.graph or not self.seeds:
            return 0.0
        spec_in = self.stats.spec_in(note_id)
        total = sum(min(1.0, self.graph[s][note_id]["confidence"]) * self.relevance(s) * self.stats.spec_out(s)
                    for s in self.linkers(note_id))
        return max(0.0, total * spec_in - self.expected_linkers(note_id) * spec_in) / self.relevant_seeds

    @property
    def relevant_seeds(self) -> int:
        """K: the seeds with some semantic evidence (a seed scoring 0 is no hit)."""
        return max(1, sum(w > 0 for w in self.seeds.values()))

    def expected_linkers(self, note_id: str) -> float:
        """How many of the seeds would link here by chance: K x the share of all notes that link here."""
        notes = max(self.stats.notes, 1)
        return self.relevant_seeds * self.stats.in_degree.get(note_id, 0) / notes

    def centrality_bonus(self, note_id: str) -> float:
        """B_cent (see the module docstring): the share of the seeds' walk reaching the note over links, damped by
        the note's global centrality (0..1)."""
        if self._pagerank is None:
            self._pagerank = link_flow(self.graph, {s: self.relevance(s) for s in self.seeds}, self.stats)
        return self._pagerank.get(note_id, 0.0) * self.stats.hub_damping(note_id)


def link_flow(graph: nx.DiGraph, seeds: dict[str, float], stats: GraphStats | None = None,
              alpha: float = 0.85) -> dict[str, float]:
    """The share of a personalised PageRank walk (restarting at the seeds, by weight) that arrives at each note
    over a link: sum over its in-links m -> n of ppr(m) * w(m, n) / w_out(m). Restarts (and the walk leaving a
    note without links) do not count, so the shares add up to at most 1. Edges weigh confidence times the
    specificity of their source, so a hub spreads its walk thin."""
    if graph.number_of_edges() == 0:
        return {}
    personalization = {n: w for n, w in seeds.items() if n in graph and w > 0}
    if not personalization:
        return {}
    for src, _, d in graph.edges(data=True):
        d["w"] = d["confidence"] * (stats.spec_out(src) if stats else 1.0)
    ranks = nx.pagerank(graph, alpha=alpha, personalization=personalization, weight="w", max_iter=200, tol=1e-8)
    out_weight = dict(graph.out_degree(weight="w"))
    flow: dict[str, float] = {}
    for src, dst, d in graph.edges(data=True):
        if out_weight[src] > 0:
            flow[dst] = flow.get(dst, 0.0) + ranks[src] * d["w"] / out_weight[src]
    return flow


def personalized_pagerank(graph: nx.DiGraph, seeds: dict[str, float], alpha: float = 0.85) -> dict[str, float]:
    """PageRank restarting at the seeds (weighted), normalised so the most central node scores 1."""
    if graph.number_of_edges() == 0:
        return {}
    personalization = {n: w for n, w in seeds.items() if n in graph and w > 0} or None
    ranks = nx.pagerank(graph, alpha=alpha, personalization=personalization, weight="confidence", max_iter=200,
                        tol=1e-8)
    top = max(ranks.values())
    return {n: r / top for n, r in ranks.items()} if top > 0 else {}


def _load_edges(client: QdrantClient, collection: str, frontier: list[str], edge_types: list[str]) -> list[dict]:
    flt = qm.Filter(
        must=[kind_filter(edge_types), qm.FieldCondition(key="resolved", match=qm.MatchValue(value=True))],
        should=[qm.FieldCondition(key="note_id", match=qm.MatchAny(any=frontier)),
                qm.FieldCondition(key="target_id", match=qm.MatchAny(any=frontier))])
    wanted = set(edge_types)
    return [e for p in scroll_points(client, collection, scroll_filter=flt) if (e := edge_as(p.payload, wanted))]


class EdgeIndex:
    """All resolved, non-structural edges held in memory, indexed by defining note and by target note.

    Local Qdrant evaluates a filtered scroll in Python over every edge point, per hop and per query; one
    scroll at start-up (and after each import) makes expansion a dictionary lookup instead. A Qdrant server
    has payload indexes, so `expand` queries it directly when no EdgeIndex is given.
    """

    def __init__(self, edges: Iterable[dict]) -> None:
        self.by_note: dict[str, list[dict]] = {}
        self.by_target: dict[str, list[dict]] = {}
        self.size = 0
        for e in edges:
            if e.get("kind") in STRUCTURAL or not e.get("resolved", True):
                continue
            self.size += 1
            self.by_note.setdefault(e["note_id"], []).append(e)
            self.by_target.setdefault(note_of(e["target_id"]), []).append(e)

    @classmethod
    def load(cls, client: QdrantClient, prefix: str) -> EdgeIndex:
        collection = names(prefix)["edges"]
        if not client.collection_exists(collection):
            return cls([])
        flt = qm.Filter(must_not=[qm.FieldCondition(key="kind", match=qm.MatchAny(any=sorted(STRUCTURAL)))])
        return cls(p.payload for p in scroll_points(client, collection, scroll_filter=flt))

    def edges_for(self, frontier: list[str], edge_types: list[str]) -> list[dict]:
        kinds = set(edge_types)
        out = []
        for note in frontier:   # an edge shows as a wanted kind (a merged default kind included): edge_as
            out += [v for e in self.by_note.get(note, ()) if (v := edge_as(e, kinds))]
            out += [v for e in self.by_target.get(note, ()) if (v := edge_as(e, kinds))]
        return out


def expand(client: QdrantClient, prefix: str, seed_ids: Iterable[str], depth: int, edge_types: list[str],
           seed_weights: dict[str, float] | None = None, edge_index: EdgeIndex | None = None,
           stats: GraphStats | None = None) -> Subgraph:
    """Load the subgraph `depth` hops around the seeds (chunk ids or note ids) over `edge_types`
    (from `edge_index` when given, else from the edges collection)."""
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
    collection = names(prefix)["edges"]
    visited: set[str] = set()
    frontier = list(seed_notes)
    seen_edges: set[str] = set()
    for _ in range(depth):
        visited.update(frontier)
        found: set[str] = set()
        loaded = (edge_index.edges_for(frontier, kinds) if edge_index is not None
                  else _load_edges(client, collection, frontier, kinds))
        for e in loaded:
            if e["edge_id"] in seen_edges:
                continue
            seen_edges.add(e["edge_id"])
            src, dst = e["note_id"], note_of(e["target_id"])
            if src == dst:
                continue
            sub.edges.append(e)
            if sub.graph.has_edge(src, dst):   # several links between two notes: keep the strongest
                sub.graph[src][dst]["confidence"] = max(sub.graph[src][dst]["confidence"], e["confidence"])
            else:
                sub.graph.add_edge(src, dst, confidence=e["confidence"])
            found.update((src, dst))
        frontier = sorted(found - visited)
        if not frontier:
            break
    return sub
