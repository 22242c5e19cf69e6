"""Graph adapter: the subgraph around the hits, loaded from `<prefix>_edges` into networkx.

The graph is kept at note level: a link edge goes from the note whose chunk holds the link to the note it
names. Per note it yields `edge_bonus` (sum of the confidences of incoming edges within the subgraph) and
`centrality_bonus` (personalised PageRank from the seed notes, as HippoRAG does, normalised to max 1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.store.collections import names, scroll_points

CHUNK_ID = re.compile(r"^(?P<note>.+)#c\d{2,}$")
STRUCTURAL = {"belongs_to", "next", "prev"}


def note_of(node_id: str) -> str:
    m = CHUNK_ID.match(node_id)
    return m.group("note") if m else node_id


@dataclass
class Subgraph:
    seeds: dict[str, float]                       # seed note id -> weight (its best semantic score)
    graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    edges: list[dict] = field(default_factory=list)   # the raw edge payloads loaded
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

    def edge_bonus(self, note_id: str) -> float:
        """Sum of the confidences of edges into this note from the seed notes (the relevant context), the
        strongest edge per seed counted once, divided by the number of seeds: 1.0 = every hit points here.
        Normalising keeps a hub note with dozens of backlinks from drowning the semantic score."""
        if note_id not in self.graph or not self.seeds:
            return 0.0
        total = sum(min(1.0, d["confidence"]) for src, _, d in self.graph.in_edges(note_id, data=True)
                    if src in self.seeds and src != note_id)
        return float(total) / len(self.seeds)

    def centrality_bonus(self, note_id: str) -> float:
        if self._pagerank is None:
            self._pagerank = personalized_pagerank(self.graph, self.seeds)
        return self._pagerank.get(note_id, 0.0)


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
        must=[qm.FieldCondition(key="kind", match=qm.MatchAny(any=edge_types)),
              qm.FieldCondition(key="resolved", match=qm.MatchValue(value=True))],
        should=[qm.FieldCondition(key="note_id", match=qm.MatchAny(any=frontier)),
                qm.FieldCondition(key="target_id", match=qm.MatchAny(any=frontier))])
    return [p.payload for p in scroll_points(client, collection, scroll_filter=flt)]


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
        for note in frontier:
            out += [e for e in self.by_note.get(note, ()) if e["kind"] in kinds]
            out += [e for e in self.by_target.get(note, ()) if e["kind"] in kinds]
        return out


def expand(client: QdrantClient, prefix: str, seed_ids: Iterable[str], depth: int, edge_types: list[str],
           seed_weights: dict[str, float] | None = None, edge_index: EdgeIndex | None = None) -> Subgraph:
    """Load the subgraph `depth` hops around the seeds (chunk ids or note ids) over `edge_types`
    (from `edge_index` when given, else from the edges collection)."""
    seed_notes: dict[str, float] = {}
    for sid in seed_ids:
        note = note_of(sid)
        weight = (seed_weights or {}).get(sid, 1.0)
        seed_notes[note] = max(seed_notes.get(note, 0.0), weight)
    sub = Subgraph(seeds=seed_notes)
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
