"""The score formula and the explanation of a hit, as data.

    total = W_sem * S_sem * max(W_type, 0) + W_edge * B_edge + W_cent * B_cent

W_type is the note type's `retriever_weight`, times `type_intent` when the question asks for another type
(`mindnet.retrieval.intent`).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from mindnet.settings import ScoringWeights


class ScoreBreakdown(BaseModel):
    """The terms of one hit's score (`total = semantic_term + edge_term + centrality_term`), as stored in a
    node's `metadata["score_breakdown"]`; made by `MindnetScorer`, never by hand."""

    model_config = ConfigDict(frozen=True)
    semantic: float = Field(description="S_sem: similarity to the query (hybrid: dense and lexical fused)")
    dense: float | None = Field(None, description="cosine similarity of the dense vectors")
    lexical: float | None = Field(None, description="normalised BM25 score (hybrid only)")
    other_language: bool = Field(False, description="the chunk's note is in another language than the question: "
                                                    "the fusion counted its lexical share at its dense share "
                                                    "(BM25 cannot match across languages)")
    retriever_weight: float = Field(description="W_type of the note's type (types.yaml retriever_weight)")
    type_intent: float = Field(1.0, description="factor on W_type from the question: below 1 when it asks for "
                                                "another note type (retriever.yaml intent.other_types_weight)")
    edge_bonus: float = Field(0.0, description="B_edge: links from the seed hits into this note, each weighted by "
                                               "the hit's relevance and both ends' specificity, / #seeds (0..1)")
    centrality_bonus: float = Field(0.0, description="B_cent: share of the seeds' PageRank walk reaching this note "
                                                     "over links, damped by its global PageRank (0..1)")
    graph_scale: float = Field(1.0, description="share of the graph bonuses kept: below 1 when they would lift "
                                                "the note above the better hit that led to it")
    semantic_weight: float
    edge_weight: float
    centrality_weight: float
    semantic_term: float
    edge_term: float
    centrality_term: float
    total: float


class Terms(NamedTuple):
    """The formula's numbers for one candidate, as plain floats: every candidate of a query is ranked by them
    (~320 at depth 1), and only the hits shown become a `ScoreBreakdown` (`breakdown_of`), whose validation
    cost more than the arithmetic. Same names as ScoreBreakdown's fields, so ranking reads either."""

    semantic: float
    dense: float | None
    lexical: float | None
    other_language: bool
    retriever_weight: float
    type_intent: float
    edge_bonus: float
    centrality_bonus: float
    graph_scale: float
    semantic_term: float
    edge_term: float
    centrality_term: float
    total: float


def compute_terms(*, semantic: float, retriever_weight: float, edge_bonus: float, centrality_bonus: float,
                  weights: ScoringWeights, dense: float | None = None, lexical: float | None = None,
                  graph_scale: float = 1.0, type_intent: float = 1.0, other_language: bool = False) -> Terms:
    """The formula; `graph_scale` (0..1) scales both graph bonuses (the lift cap), so the terms still add up;
    `type_intent` multiplies W_type (the question asks for another type: below 1)."""
    edge_bonus, centrality_bonus = edge_bonus * graph_scale, centrality_bonus * graph_scale
    sem_term = weights.semantic_weight * semantic * max(retriever_weight, 0.0) * type_intent
    edge_term = weights.edge_weight * edge_bonus
    cent_term = weights.centrality_weight * centrality_bonus
    return Terms(semantic, dense, lexical, other_language, retriever_weight, type_intent, edge_bonus,
                 centrality_bonus, graph_scale, sem_term, edge_term, cent_term, sem_term + edge_term + cent_term)


def breakdown_of(t: Terms | ScoreBreakdown, weights: ScoringWeights) -> ScoreBreakdown:
    """The hit's ScoreBreakdown of its terms, with the weights they were made with."""
    if isinstance(t, ScoreBreakdown):
        return t
    return ScoreBreakdown(**t._asdict(), semantic_weight=weights.semantic_weight, edge_weight=weights.edge_weight,
                          centrality_weight=weights.centrality_weight)


def compute_score(*, semantic: float, retriever_weight: float, edge_bonus: float, centrality_bonus: float,
                  weights: ScoringWeights, dense: float | None = None, lexical: float | None = None,
                  graph_scale: float = 1.0, type_intent: float = 1.0, other_language: bool = False
                  ) -> ScoreBreakdown:
    """`compute_terms` as a ScoreBreakdown."""
    return breakdown_of(compute_terms(semantic=semantic, retriever_weight=retriever_weight, edge_bonus=edge_bonus,
                                      centrality_bonus=centrality_bonus, weights=weights, dense=dense,
                                      lexical=lexical, graph_scale=graph_scale, type_intent=type_intent,
                                      other_language=other_language), weights)


def rank_key(b: ScoreBreakdown | Terms) -> tuple[float, float]:
    """Sort key, best first: the total (to 9 decimals), then the semantic term. Chunks the lift cap holds below
    the same hit tie on their total up to float noise (which differs between engines: Qdrant Edge keeps float32
    vectors); the better-matching chunk then comes first, the same from either."""
    return -round(b.total, 9), -b.semantic_term


def capped(b: ScoreBreakdown | Terms, ceiling: float, weights: ScoringWeights) -> ScoreBreakdown | Terms:
    """`b` with its graph bonuses scaled so the total stays at or below `ceiling` (never below the semantic
    term alone): the graph may bring a note up to the hit that led to it, not past it. Terms stay Terms."""
    lift = b.edge_term + b.centrality_term
    if lift <= 0 or b.total <= ceiling:
        return b
    scale = max(0.0, min(1.0, (ceiling - b.semantic_term) / lift)) * b.graph_scale
    base = b.graph_scale or 1.0
    terms = compute_terms(semantic=b.semantic, dense=b.dense, lexical=b.lexical, retriever_weight=b.retriever_weight,
                          edge_bonus=b.edge_bonus / base, centrality_bonus=b.centrality_bonus / base,
                          weights=weights, graph_scale=scale, type_intent=b.type_intent,
                          other_language=b.other_language)
    return terms if isinstance(b, Terms) else breakdown_of(terms, weights)


class GraphEvidence(BaseModel):
    """What the graph knew about a hit, as data (the explanation's sentences are made from it)."""

    model_config = ConfigDict(frozen=True)
    seeds: int = Field(description="number of best hits (seed notes) the graph was expanded from")
    linked_from: list[str] = Field(default_factory=list, description="seed notes linking here, best first")
    linked_from_titles: list[str] = Field(default_factory=list)
    in_links: int = Field(0, description="distinct notes linking here, in the whole vault")
    out_links: int = Field(0, description="distinct notes this note links to, in the whole vault")
    hub_factor: float = Field(1.0, description="specificity of incoming links: min(1, sqrt(hub_degree/in_links))")
    pagerank_rel: float = Field(0.0, description="global PageRank relative to an average note (1 = average)")
    centrality_damping: float = Field(1.0, description="min(1, 1 / pagerank_rel)")
    capped_below: str | None = Field(None, description="the better hit that led here, which it may not pass")
    capped_below_links_here: bool = Field(True, description="the capping hit links here; False: no better hit "
                                                            "links here and the best hit above it caps it")


RESOLVED_THROUGH = {"alias": "the alias", "title": "the title", "id": "the id"}


class EdgeRef(BaseModel):
    model_config = ConfigDict(frozen=True)
    direction: str            # "incoming" (other -> hit) or "outgoing" (hit -> other)
    kind: str
    rule_id: str
    confidence: float
    other_id: str
    other_title: str | None = None
    resolved: bool = True
    section: str | None = Field(None, description="the heading or block the link targets (its chunk): in the "
                                                  "other note for an outgoing link, in this one for an incoming")
    resolved_by: str | None = Field(None, description="the rule the link resolved by (path, name, self, id, "
                                                      "alias, title; mindnet.indexing.resolver)")
    written: str | None = Field(None, description="the link target as written")
    here: bool = Field(False, description="an incoming link to a section that this very chunk holds")

    def sentence(self) -> str:
        other = self.other_title or self.other_id
        where = ""
        if self.section and self.direction == "incoming":
            where = f" (links to {self.section_words()}{', this passage' if self.here else ''})"
        if self.direction == "incoming":
            head = f"referenced by '{other}'{where}"
        elif self.section:
            head = f"links to {self.section_words()} of '{other}'"
        else:
            head = f"points to '{other}'"
        through = RESOLVED_THROUGH.get(self.resolved_by or "")
        via = f", resolved through {through} '{self.written}'" if through and self.written else ""
        return f"{head}{via} ({self.kind}, {self.rule_id}, confidence {self.confidence:.2f})"

    def section_words(self) -> str:
        section = self.section or ""
        if section.startswith("^"):
            return f"the block '{section}'"
        return f"the section '{section.rsplit('#', 1)[-1]}'"


class Explanation(BaseModel):
    """Why a hit ranks where it does: readable `reasons` and the edges to and from its note, as stored in a
    node's `metadata["explanation"]`; made by `MindnetScorer`."""

    model_config = ConfigDict(frozen=True)
    reasons: list[str]
    incoming: list[EdgeRef] = Field(default_factory=list)
    outgoing: list[EdgeRef] = Field(default_factory=list)
    via_graph: bool = Field(False, description="found only through graph expansion, not by the vector search")
    graph: GraphEvidence | None = None


def graph_sentences(b: ScoreBreakdown, g: GraphEvidence) -> list[str]:
    """Plain words for the graph's part: who links here, and why a hub counts less."""
    out = []
    if g.linked_from:
        names = ", ".join(f"'{t}'" for t in (g.linked_from_titles or g.linked_from)[:3])
        more = f" and {len(g.linked_from) - 3} more" if len(g.linked_from) > 3 else ""
        out.append(f"linked from {len(g.linked_from)} of the {g.seeds} best hits ({names}{more}) -> "
                   f"edge +{b.edge_term:.3f}")
    if g.hub_factor < 1 and (g.linked_from or b.centrality_bonus):
        out.append(f"hub with {g.in_links} incoming links: damped (x{g.hub_factor:.2f})")
    if b.centrality_bonus:
        out.append(f"reached by {100 * b.centrality_bonus / (b.graph_scale or 1) / g.centrality_damping:.0f}% "
                   f"of the walk from the best hits -> centrality +{b.centrality_term:.3f}")
    if g.centrality_damping < 1:
        out.append(f"central in the whole vault (PageRank {g.pagerank_rel:.1f}x an average note): centrality "
                   f"damped (x{g.centrality_damping:.2f})")
    if g.capped_below and g.capped_below_links_here:
        out.append(f"graph bonus cut to {100 * b.graph_scale:.0f}%: kept below '{g.capped_below}', the better hit "
                   f"that led here")
    elif g.capped_below:
        out.append(f"graph bonus cut to {100 * b.graph_scale:.0f}%: kept below '{g.capped_below}', a better hit "
                   f"(the hits linking here score lower: links from weaker hits do not lift a note over a better one)")
    return out


def explain(b: ScoreBreakdown, *, note_type: str, incoming: list[EdgeRef], outgoing: list[EdgeRef],
            via_graph: bool, graph_used: bool, graph: GraphEvidence | None = None,
            index_note: bool = False, asked_types: list[str] | None = None) -> Explanation:
    parts = [f"semantic match {b.semantic:.3f}"]
    if b.dense is not None and b.lexical is not None:
        parts[0] += f" (dense {b.dense:.3f}, lexical {b.lexical:.3f}"
        parts[0] += ", in another language than the question: keywords counted as much as the meaning)" \
            if b.other_language else ")"
    elif b.dense is not None:   # semantic mode: the cosine, min-max scaled over the candidates
        parts[0] += f" (cosine {b.dense:.3f}, scaled between the candidates' lowest and highest)"
    weight = f"{b.retriever_weight:g}" if b.type_intent == 1 else f"{b.retriever_weight:g} x {b.type_intent:g}"
    reasons = [parts[0] + f" x type '{note_type}' weight {weight} -> {b.semantic_term:.3f}"]
    if index_note:
        reasons.append(f"index note (mostly links to other notes): damped (x{b.retriever_weight:g})")
    if asked_types:
        asked = " or ".join(f"'{t}'" for t in asked_types)
        reasons.append(f"the question asks for a {asked} note: this one is of that type" if b.type_intent == 1 else
                       f"the question asks for a {asked} note, this is a '{note_type}' note: damped "
                       f"(x{b.type_intent:g})")
    if via_graph:
        reasons.append("found through graph expansion from the vector hits")
    if graph is not None:
        reasons += graph_sentences(b, graph)
    else:
        if b.edge_bonus:
            reasons.append(f"edge bonus {b.edge_bonus:.2f} (linked from other hits) -> +{b.edge_term:.3f}")
        if b.centrality_bonus:
            reasons.append(f"central in the result subgraph (PageRank {b.centrality_bonus:.2f}) -> "
                           f"+{b.centrality_term:.3f}")
    if not graph_used:
        reasons.append("graph not consulted (semantic mode or depth 0)")
    reasons += [e.sentence() for e in incoming[:5]] + [e.sentence() for e in outgoing[:5]]
    return Explanation(reasons=reasons, incoming=incoming, outgoing=outgoing, via_graph=via_graph, graph=graph)
