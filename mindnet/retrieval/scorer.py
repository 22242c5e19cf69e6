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
from mindnet.retrieval.hit_scorer import RESULT_KEYS, SEMANTIC_KEY, HitScorer, lift_ceilings
from mindnet.retrieval.scoring import GraphEvidence, ScoreBreakdown, rank_key
from mindnet.settings import RetrieverConfig, ScoringWeights, shipped_retriever
from mindnet.store.engine import Store

__all__ = ["RESULT_KEYS", "SEMANTIC_KEY", "MindnetScorer", "lift_ceilings"]


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

    @property
    def hits(self) -> HitScorer:
        """The formula with these weights, without LlamaIndex (what `GraphSearch` scores with)."""
        return HitScorer(weights=self.weights, near_share=self.near_share)

    def breakdown(self, *, semantic: float, retriever_weight: float, note_id: str, subgraph: Subgraph | None,
                  dense: float | None = None, lexical: float | None = None, type_intent: float = 1.0,
                  other_language: bool = False) -> ScoreBreakdown:
        """The formula for one hit (pure: no I/O), so a caller can rank many candidates cheaply."""
        return self.hits.breakdown(semantic=semantic, retriever_weight=retriever_weight, note_id=note_id,
                                   subgraph=subgraph, dense=dense, lexical=lexical, type_intent=type_intent,
                                   other_language=other_language)

    def cap(self, entries: list[tuple[str, ScoreBreakdown]], subgraph: Subgraph | None
            ) -> list[tuple[ScoreBreakdown, str | None]]:
        """Each breakdown with the lift cap applied, and the note that capped it (or None)."""
        return self.hits.cap(entries, subgraph)

    @staticmethod
    def evidence(note_id: str, subgraph: Subgraph, titles: dict[str, str], capped_by: str | None
                 ) -> GraphEvidence:
        return HitScorer.evidence(note_id, subgraph, titles, capped_by)

    def finish(self, node: BaseNode, breakdown: ScoreBreakdown, subgraph: Subgraph | None,
               titles: dict[str, str], capped_by: str | None = None,
               asked_types: list[str] | None = None) -> NodeWithScore:
        """A copy of `node` scored `breakdown.total`, with breakdown and explanation in its metadata."""
        copy = node.model_copy()
        copy.metadata = self.hits.result_metadata(node.metadata, node.node_id, breakdown, subgraph, titles,
                                                  capped_by, asked_types)
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
