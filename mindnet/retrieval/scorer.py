"""`MindnetScorer`: a LlamaIndex node postprocessor that scores chunk nodes with mindnet's formula.

It works on nodes from any retriever over the chunks collection: S_sem is the node's score (or the fused
semantic score mindnet's retriever put in metadata), W_type its `retriever_weight`. Given the index (a `Store`)
and depth > 0 it expands the graph around the nodes itself; `MindnetRetriever` passes its subgraph instead.
Each node comes back with `score = total` and metadata `score_breakdown` and `explanation` (plain dicts).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from mindnet.retrieval.graph import GraphStats, LinkGraph, Subgraph, expand, note_of
from mindnet.retrieval.graph_file import open_graph
from mindnet.retrieval.scoring import (
    EdgeRef,
    GraphEvidence,
    ScoreBreakdown,
    capped,
    compute_score,
    explain,
    rank_key,
)
from mindnet.settings import RetrieverConfig, ScoringWeights, shipped_retriever
from mindnet.store.engine import Store

SEMANTIC_KEY = "mindnet_semantic"      # set by MindnetRetriever: {"semantic", "dense", "lexical", "via_graph"}
RESULT_KEYS = ["score_breakdown", "explanation", SEMANTIC_KEY]


def _edge_refs(edges: list[dict], direction: str, titles: dict[str, str], chunk: str | None = None) -> list[EdgeRef]:
    """The edges as explanation data; `chunk`: the hit's chunk (an incoming link to its section says so)."""
    refs = []
    for e in sorted(edges, key=lambda e: -e["confidence"]):
        other = e["note_id"] if direction == "incoming" else note_of(e["target_id"])
        # a link to a heading or block that resolved targets the chunk holding it
        section = e.get("anchor") if e.get("anchor") and e.get("target_chunk") else None
        refs.append(EdgeRef(direction=direction, kind=e["kind"], rule_id=e["rule_id"], confidence=e["confidence"],
                            other_id=other, other_title=titles.get(other), resolved=e.get("resolved", True),
                            section=section, resolved_by=e.get("resolved_by"), written=e.get("target_text"),
                            here=bool(section) and direction == "incoming" and e.get("target_chunk") == chunk))
    return refs


def lift_ceilings(entries: list[tuple[str, ScoreBreakdown]], subgraph: Subgraph | None, near_share: float = 1.0
                  ) -> list[tuple[float | None, str | None]]:
    """For each (note id, breakdown): the total it may not pass and the note that sets it, or (None, None).

    A note lifted by the graph stays below the best hit that led to it: among the notes linking to it in the
    subgraph (else the seeds), those with a higher semantic term, whose own totals are final by then (they are
    visited first, by semantic term). A note whose own semantic term reaches `near_share` of that hit's is a
    near-equal match in its own right (retriever.yaml graph.near_share): the links may decide between the two,
    so it may pass that hit, but not the hit that held that one (B held below A: C, near-equal to B, may pass B,
    not A; before, C passed A too, a hit it does not nearly equal)."""
    out: list[tuple[float | None, str | None]] = [(None, None)] * len(entries)
    if subgraph is None:
        return out
    order = sorted(range(len(entries)), key=lambda i: (-entries[i][1].semantic_term, i))
    final: dict[str, float] = {}
    own: dict[str, float] = {}       # a visited note's best semantic term (its first visited chunk's)
    held: dict[str, tuple[float, str]] = {}     # a visited note's ceiling and the hit that set it
    for i in order:
        note, b = entries[i]
        if b.edge_term + b.centrality_term > 0:
            leaders = [src for src in subgraph.sources(note) if src in final and src != note]
            leaders = leaders or [s for s in subgraph.seeds if s in final and s != note]
            if leaders:
                best = max(leaders, key=lambda n: (final[n], n))
                if b.semantic_term <= 0 or b.semantic_term < near_share * own[best]:
                    out[i] = (final[best] - 1e-6, best)
                elif best in held:
                    out[i] = held[best]
        ceiling = out[i][0]
        if ceiling is not None:
            held.setdefault(note, (ceiling, str(out[i][1])))
        final[note] = max(final.get(note, float("-inf")), b.total if ceiling is None else min(b.total, ceiling))
        own.setdefault(note, b.semantic_term)
    return out


class MindnetScorer(BaseNodePostprocessor):
    """A LlamaIndex node postprocessor that rescores chunk nodes from any retriever with mindnet's formula
    (semantic score x note-type weight, plus graph bonuses) and explains each score in the node's metadata.

    `MindnetScorer()` uses the shipped weights (retriever.yaml); `MindnetScorer(store=retriever.store,
    depth=1)` also expands the graph around the nodes for the edge and centrality bonuses;
    `MindnetScorer.from_config(retriever_config, store=...)` takes your own retriever.yaml settings.
    """

    weights: ScoringWeights = Field(default_factory=lambda: shipped_retriever().scoring)
    depth: int = Field(0, ge=0, le=3, description="graph hops to expand when no subgraph is given")
    edge_types: list[str] = Field(default_factory=lambda: list(shipped_retriever().expand.edge_types))
    prefix: str = Field("mindnet", description="collection prefix, for graph expansion and titles")
    hub_degree: float = Field(default_factory=lambda: shipped_retriever().graph.hub_degree, gt=0,
                              description="links a note may have before its links count less")
    chance: float = Field(default_factory=lambda: shipped_retriever().graph.chance, ge=0, le=1,
                          description="share of the chance-expected linkers subtracted in B_edge")
    near_share: float = Field(default_factory=lambda: shipped_retriever().graph.near_share, gt=0, le=1,
                              description="a lifted note whose own semantic term reaches this share of the hit "
                                          "that would cap it may pass it")
    _store: Store | None = PrivateAttr(default=None)
    _graph: LinkGraph | None = PrivateAttr(default=None)

    def __init__(self, *, store: Store | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store = store

    @classmethod
    def from_config(cls, config: RetrieverConfig, *, store: Store | None = None, prefix: str = "mindnet",
                    depth: int | None = None) -> MindnetScorer:
        return cls(store=store, weights=config.scoring, prefix=prefix, edge_types=list(config.expand.edge_types),
                   depth=config.expand.depth if depth is None else depth, hub_degree=config.graph.hub_degree,
                   chance=config.graph.chance, near_share=config.graph.near_share)

    @classmethod
    def class_name(cls) -> str:
        return "MindnetScorer"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        subgraph = None
        graph = self.link_graph()
        if graph is not None and self.depth > 0 and nodes:
            ids = [n.node.metadata.get("chunk_id", n.node.node_id) for n in nodes]
            weights = {i: float(n.score or 0.0) for i, n in zip(ids, nodes, strict=True)}
            subgraph = expand(graph.index, ids, self.depth, self.edge_types, weights, stats=graph.stats)
        return self.score_nodes(nodes, subgraph, graph.titles if graph is not None else None)

    def link_graph(self) -> LinkGraph | None:
        """The index's link graph, read once (a retriever passes its subgraph and titles instead)."""
        if self._graph is None and self._store is not None and self._store.exists("notes"):
            data = open_graph(self._store, write=False).data
            self._graph = LinkGraph.from_data(data, self.hub_degree, self.chance)
        return self._graph

    def graph_stats(self) -> GraphStats:
        """Vault-wide degrees and PageRank (empty without an index)."""
        graph = self.link_graph()
        return graph.stats if graph is not None else GraphStats.empty(self.hub_degree, self.chance)

    def breakdown(self, *, semantic: float, retriever_weight: float, note_id: str, subgraph: Subgraph | None,
                  dense: float | None = None, lexical: float | None = None, type_intent: float = 1.0,
                  other_language: bool = False) -> ScoreBreakdown:
        """The formula for one hit (pure: no I/O), so a caller can rank many candidates cheaply."""
        return compute_score(
            semantic=semantic, dense=dense, lexical=lexical, retriever_weight=retriever_weight,
            type_intent=type_intent, other_language=other_language,
            edge_bonus=subgraph.edge_bonus(note_id) if subgraph else 0.0,
            centrality_bonus=subgraph.centrality_bonus(note_id) if subgraph else 0.0, weights=self.weights)

    def cap(self, entries: list[tuple[str, ScoreBreakdown]], subgraph: Subgraph | None
            ) -> list[tuple[ScoreBreakdown, str | None]]:
        """Each breakdown with the lift cap applied, and the note that capped it (or None)."""
        return [(capped(b, ceiling, self.weights), by) if ceiling is not None and b.total > ceiling else (b, None)
                for (_, b), (ceiling, by) in zip(entries, lift_ceilings(entries, subgraph, self.near_share),
                                                 strict=True)]

    @staticmethod
    def evidence(note_id: str, subgraph: Subgraph, titles: dict[str, str], capped_by: str | None
                 ) -> GraphEvidence:
        stats = subgraph.stats
        linkers = subgraph.linkers(note_id)
        return GraphEvidence(
            seeds=subgraph.relevant_seeds, linked_from=linkers,
            linked_from_titles=[titles.get(n) or n for n in linkers],
            in_links=stats.in_degree.get(note_id, 0), out_links=stats.out_degree.get(note_id, 0),
            hub_factor=round(stats.spec_in(note_id), 4), pagerank_rel=round(stats.pr_rel.get(note_id, 0.0), 4),
            centrality_damping=round(stats.hub_damping(note_id), 4),
            capped_below=(titles.get(capped_by) or capped_by) if capped_by else None,
            capped_below_links_here=not capped_by or subgraph.graph.has_edge(capped_by, note_id))

    def finish(self, node: BaseNode, breakdown: ScoreBreakdown, subgraph: Subgraph | None,
               titles: dict[str, str], capped_by: str | None = None,
               asked_types: list[str] | None = None) -> NodeWithScore:
        """A copy of `node` scored `breakdown.total`, with breakdown and explanation in its metadata."""
        meta = node.metadata
        sem = meta.get(SEMANTIC_KEY) or {}
        note_id = meta.get("note_id") or note_of(meta.get("chunk_id", node.node_id))
        chunk = str(meta.get("chunk_id", node.node_id))
        incoming = _edge_refs(subgraph.incoming(note_id), "incoming", titles, chunk) if subgraph else []
        outgoing = _edge_refs(subgraph.outgoing(note_id), "outgoing", titles) if subgraph else []
        explanation = explain(breakdown, note_type=str(meta.get("type", "?")), incoming=incoming,
                              outgoing=outgoing, via_graph=bool(sem.get("via_graph")),
                              graph_used=subgraph is not None,
                              graph=self.evidence(note_id, subgraph, titles, capped_by) if subgraph else None,
                              index_note=bool(meta.get("index_note")), asked_types=asked_types)
        copy = node.model_copy()
        copy.metadata = {**meta, "score_breakdown": breakdown.model_dump(), "explanation": explanation.model_dump()}
        copy.excluded_llm_metadata_keys = list(dict.fromkeys([*copy.excluded_llm_metadata_keys, *RESULT_KEYS]))
        copy.excluded_embed_metadata_keys = list(dict.fromkeys([*copy.excluded_embed_metadata_keys, *RESULT_KEYS]))
        return NodeWithScore(node=copy, score=breakdown.total)

    def score_nodes(self, nodes: list[NodeWithScore], subgraph: Subgraph | None,
                    titles: dict[str, str] | None = None) -> list[NodeWithScore]:
        """Score and explain `nodes`, best first; `titles` (note id -> title) name the other ends of edges."""
        titles = dict(titles or {})
        for n in nodes:
            titles.setdefault(n.node.metadata.get("note_id", ""), n.node.metadata.get("title", ""))
        entries = []
        for n in nodes:
            meta = n.node.metadata
            sem = meta.get(SEMANTIC_KEY) or {}
            note_id = meta.get("note_id") or note_of(meta.get("chunk_id", n.node.node_id))
            entries.append((note_id, self.breakdown(
                semantic=float(sem.get("semantic", n.score or 0.0)), dense=sem.get("dense"),
                lexical=sem.get("lexical"), retriever_weight=float(meta.get("retriever_weight", 1.0)),
                note_id=note_id, subgraph=subgraph)))
        scored = [self.finish(n.node, b, subgraph, titles, by)
                  for n, (b, by) in zip(nodes, self.cap(entries, subgraph), strict=True)]
        scored.sort(key=lambda x: (*rank_key(ScoreBreakdown(**x.node.metadata["score_breakdown"])),
                                   x.node.metadata.get("chunk_id", x.node.node_id)))
        return scored
