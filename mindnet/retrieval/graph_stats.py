"""The vault-wide link figures of the graph (`GraphStats`: distinct in/out links, global PageRank) and the walk
shares the centrality bonus is made of (`link_flow`); the formulas are in `graph.py`'s docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import networkx as nx
import numpy as np

from mindnet.retrieval.graph_arrays import GraphData, graph_figures, pagerank

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
    note. They come with the link graph (`GraphStats.from_data`); built from edge payloads (tests) they are
    computed here the same way, on CSR arrays."""

    def __init__(self, edges: Iterable[dict], note_count: int = 0, *, hub_degree: float = 10.0,
                 chance: float = 0.0) -> None:
        best: dict[tuple[str, str], float] = {}
        for e in edges:
            src, dst = e["note_id"], note_of(e["target_id"])
            if src != dst and e.get("kind") not in STRUCTURAL and e.get("resolved", True):
                conf = float(e.get("confidence", 1.0))
                if best.get((src, dst), -math.inf) < conf:
                    best[(src, dst)] = conf
        nodes = list(dict.fromkeys(n for pair in best for n in pair))
        index = {n: i for i, n in enumerate(nodes)}
        src_a = np.fromiter((index[s] for s, _ in best), dtype=np.int64, count=len(best))
        dst_a = np.fromiter((index[d] for _, d in best), dtype=np.int64, count=len(best))
        conf_a = np.fromiter(best.values(), dtype=np.float64, count=len(best))
        in_deg, out_deg, pr_rel, _ = graph_figures(len(nodes), src_a, dst_a, conf_a)
        self._set(nodes, in_deg, out_deg, pr_rel, max(note_count, len(nodes)), hub_degree, chance)

    def _set(self, nodes: list[str], in_deg: np.ndarray, out_deg: np.ndarray, pr_rel: np.ndarray, notes: int,
             hub_degree: float, chance: float = 0.0) -> None:
        self.hub_degree = hub_degree
        self.chance = chance          # weight of the chance correction in B_edge (retriever.yaml graph.chance)
        self.in_degree: dict[str, int] = dict(zip(nodes, in_deg.tolist(), strict=True))
        self.out_degree: dict[str, int] = dict(zip(nodes, out_deg.tolist(), strict=True))
        self.notes = notes
        self.pr_rel: dict[str, float] = dict(zip(nodes, pr_rel.tolist(), strict=True)) if len(nodes) else {}

    @classmethod
    def from_data(cls, data: GraphData, hub_degree: float = 10.0, chance: float = 0.0) -> GraphStats:
        """The figures of the link graph (only notes with a link have an entry)."""
        stats = cls.__new__(cls)
        keep = np.flatnonzero(data.linked)
        stats._set([data.nodes[i] for i in keep.tolist()], data.in_degree[keep], data.out_degree[keep],
                   data.pr_rel[keep], data.graph_notes, hub_degree, chance)
        return stats

    @classmethod
    def empty(cls, hub_degree: float = 10.0, chance: float = 0.0) -> GraphStats:
        return cls([], hub_degree=hub_degree, chance=chance)

    def spec_in(self, note_id: str) -> float:
        return specificity(self.in_degree.get(note_id, 0), self.hub_degree)

    def spec_out(self, note_id: str) -> float:
        return specificity(self.out_degree.get(note_id, 0), self.hub_degree)

    def hub_damping(self, note_id: str) -> float:
        """min(1, 1 / relative global PageRank): 1 for a note no more central than the average linked note."""
        rel = self.pr_rel.get(note_id, 0.0)
        return 1.0 if rel <= 1.0 else 1.0 / rel


def link_flow(graph: nx.DiGraph, seeds: dict[str, float], stats: GraphStats | None = None,
              alpha: float = 0.85) -> dict[str, float]:
    """The share of a personalised PageRank walk (restarting at the seeds, by weight) that arrives at each note
    over a link: sum over its in-links m -> n of ppr(m) * w(m, n) / w_out(m). Restarts (and the walk leaving a
    note without links) do not count, so the shares add up to at most 1. Edges weigh confidence times the
    specificity of their source, so a hub spreads its walk thin. Computed on arrays (networkx's PageRank
    iteration, not networkx: it dominated depth-1 and depth-2 queries)."""
    if graph.number_of_edges() == 0:
        return {}
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    restart = np.array([max(0.0, seeds.get(n, 0.0)) for n in nodes])
    if not restart.any():
        return {}
    edges = list(graph.edges(data="confidence"))
    src = np.fromiter((index[a] for a, _, _ in edges), dtype=np.int64, count=len(edges))
    dst = np.fromiter((index[b] for _, b, _ in edges), dtype=np.int64, count=len(edges))
    spec = {a: stats.spec_out(a) for a in graph.nodes} if stats else None
    w = np.fromiter((c * (spec[a] if spec else 1.0) for a, _, c in edges), dtype=np.float64, count=len(edges))
    ranks = pagerank(len(nodes), src, dst, w, alpha=alpha, personalization=restart)
    out_weight = np.bincount(src, weights=w, minlength=len(nodes))
    live = out_weight[src] > 0
    share = np.zeros(len(nodes))
    np.add.at(share, dst[live], ranks[src[live]] * w[live] / out_weight[src[live]])
    reached = np.unique(dst[live])
    return dict(zip([nodes[i] for i in reached.tolist()], share[reached].tolist(), strict=True))


def personalized_pagerank(graph: nx.DiGraph, seeds: dict[str, float], alpha: float = 0.85) -> dict[str, float]:
    """PageRank restarting at the seeds (weighted), normalised so the most central node scores 1."""
    if graph.number_of_edges() == 0:
        return {}
    personalization = {n: w for n, w in seeds.items() if n in graph and w > 0} or None
    ranks = nx.pagerank(graph, alpha=alpha, personalization=personalization, weight="confidence", max_iter=200,
                        tol=1e-8)
    top = max(ranks.values())
    return {n: r / top for n, r in ranks.items()} if top > 0 else {}
