"""The score formula and the explanation of a hit, as data.

    total = W_sem * S_sem * max(W_type, 0) + W_edge * B_edge + W_cent * B_cent
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mindnet.settings import ScoringWeights


class ScoreBreakdown(BaseModel):
    """The terms of one hit's score (`total = semantic_term + edge_term + centrality_term`), as stored in a
    node's `metadata["score_breakdown"]`; made by `MindnetScorer`, never by hand."""

    model_config = ConfigDict(frozen=True)
    semantic: float = Field(description="S_sem: similarity to the query (hybrid: dense and lexical fused)")
    dense: float | None = Field(None, description="cosine similarity of the dense vectors")
    lexical: float | None = Field(None, description="normalised BM25 score (hybrid only)")
    retriever_weight: float = Field(description="W_type of the note's type")
    edge_bonus: float = Field(0.0, description="B_edge: confidences of edges from the seed notes into this one, "
                                               "summed and divided by the number of seeds (0..1)")
    centrality_bonus: float = Field(0.0, description="B_cent: personalised PageRank in the subgraph, max = 1")
    semantic_weight: float
    edge_weight: float
    centrality_weight: float
    semantic_term: float
    edge_term: float
    centrality_term: float
    total: float


def compute_score(*, semantic: float, retriever_weight: float, edge_bonus: float, centrality_bonus: float,
                  weights: ScoringWeights, dense: float | None = None, lexical: float | None = None
                  ) -> ScoreBreakdown:
    sem_term = weights.semantic_weight * semantic * max(retriever_weight, 0.0)
    edge_term = weights.edge_weight * edge_bonus
    cent_term = weights.centrality_weight * centrality_bonus
    return ScoreBreakdown(
        semantic=semantic, dense=dense, lexical=lexical, retriever_weight=retriever_weight,
        edge_bonus=edge_bonus, centrality_bonus=centrality_bonus, semantic_weight=weights.semantic_weight,
        edge_weight=weights.edge_weight, centrality_weight=weights.centrality_weight,
        semantic_term=sem_term, edge_term=edge_term, centrality_term=cent_term,
        total=sem_term + edge_term + cent_term)


class EdgeRef(BaseModel):
    model_config = ConfigDict(frozen=True)
    direction: str            # "incoming" (other -> hit) or "outgoing" (hit -> other)
    kind: str
    rule_id: str
    confidence: float
    other_id: str
    other_title: str | None = None
    resolved: bool = True

    def sentence(self) -> str:
        other = self.other_title or self.other_id
        verb = "referenced by" if self.direction == "incoming" else "points to"
        return f"{verb} '{other}' ({self.kind}, {self.rule_id}, confidence {self.confidence:.2f})"


class Explanation(BaseModel):
    """Why a hit ranks where it does: readable `reasons` and the edges to and from its note, as stored in a
    node's `metadata["explanation"]`; made by `MindnetScorer`."""

    model_config = ConfigDict(frozen=True)
    reasons: list[str]
    incoming: list[EdgeRef] = Field(default_factory=list)
    outgoing: list[EdgeRef] = Field(default_factory=list)
    via_graph: bool = Field(False, description="found only through graph expansion, not by the vector search")


def explain(b: ScoreBreakdown, *, note_type: str, incoming: list[EdgeRef], outgoing: list[EdgeRef],
            via_graph: bool, graph_used: bool) -> Explanation:
    parts = [f"semantic match {b.semantic:.3f}"]
    if b.dense is not None and b.lexical is not None:
        parts[0] += f" (dense {b.dense:.3f}, lexical {b.lexical:.3f})"
    reasons = [parts[0] + f" x type '{note_type}' weight {b.retriever_weight:g} -> {b.semantic_term:.3f}"]
    if via_graph:
        reasons.append("found through graph expansion from the vector hits")
    if b.edge_bonus:
        reasons.append(f"edge bonus {b.edge_bonus:.2f} (linked from other hits) -> +{b.edge_term:.3f}")
    if b.centrality_bonus:
        reasons.append(f"central in the result subgraph (PageRank {b.centrality_bonus:.2f}) -> "
                       f"+{b.centrality_term:.3f}")
    if not graph_used:
        reasons.append("graph not consulted (semantic mode or depth 0)")
    reasons += [e.sentence() for e in incoming[:5]] + [e.sentence() for e in outgoing[:5]]
    return Explanation(reasons=reasons, incoming=incoming, outgoing=outgoing, via_graph=via_graph)
