"""mindnet's scoring of hits without LlamaIndex: the formula per hit (`HitScorer.breakdown`), the lift cap
(`lift_ceilings`) and the explanation a hit carries in its metadata (`HitScorer.result_metadata`).

`GraphSearch` (search.py) uses it directly; `MindnetScorer` (scorer.py), the LlamaIndex node postprocessor, is
built on it, so both give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mindnet.retrieval.graph import Subgraph, note_of
from mindnet.retrieval.scoring import (
    EdgeRef,
    GraphEvidence,
    ScoreBreakdown,
    Terms,
    breakdown_of,
    capped,
    compute_terms,
    explain,
)
from mindnet.settings import RetrieverConfig, ScoringWeights

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


def lift_ceilings(entries: list[tuple[str, ScoreBreakdown | Terms]], subgraph: Subgraph | None, near_share: float = 1.0
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


@dataclass(frozen=True)
class HitScorer:
    """The formula with retriever.yaml's weights (`scoring`) and `graph.near_share`, pure: no I/O."""

    weights: ScoringWeights
    near_share: float = 1.0

    @classmethod
    def from_config(cls, config: RetrieverConfig) -> HitScorer:
        return cls(weights=config.scoring, near_share=config.graph.near_share)

    def terms(self, *, semantic: float, retriever_weight: float, note_id: str, subgraph: Subgraph | None,
              dense: float | None = None, lexical: float | None = None, type_intent: float = 1.0,
              other_language: bool = False) -> Terms:
        """The formula for one candidate as plain numbers (pure: no I/O), so a caller can rank many cheaply."""
        return compute_terms(
            semantic=semantic, dense=dense, lexical=lexical, retriever_weight=retriever_weight,
            type_intent=type_intent, other_language=other_language,
            edge_bonus=subgraph.edge_bonus(note_id) if subgraph else 0.0,
            centrality_bonus=subgraph.centrality_bonus(note_id) if subgraph else 0.0, weights=self.weights)

    def breakdown(self, **kwargs: Any) -> ScoreBreakdown:
        """`terms` as a ScoreBreakdown (the keyword arguments of `terms`)."""
        return breakdown_of(self.terms(**kwargs), self.weights)

    def cap(self, entries: list[tuple[str, ScoreBreakdown | Terms]], subgraph: Subgraph | None
            ) -> list[tuple[ScoreBreakdown | Terms, str | None]]:
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

    def result_metadata(self, meta: dict[str, Any], node_id: str, breakdown: ScoreBreakdown | Terms,
                        subgraph: Subgraph | None, titles: dict[str, str], capped_by: str | None = None,
                        asked_types: list[str] | None = None) -> dict[str, Any]:
        """`meta` (a chunk's metadata; `node_id` its node's id) with the breakdown and the explanation added."""
        breakdown = breakdown_of(breakdown, self.weights)
        sem = meta.get(SEMANTIC_KEY) or {}
        note_id = meta.get("note_id") or note_of(meta.get("chunk_id", node_id))
        chunk = str(meta.get("chunk_id", node_id))
        incoming = _edge_refs(subgraph.incoming(note_id), "incoming", titles, chunk) if subgraph else []
        outgoing = _edge_refs(subgraph.outgoing(note_id), "outgoing", titles) if subgraph else []
        explanation = explain(breakdown, note_type=str(meta.get("type", "?")), incoming=incoming,
                              outgoing=outgoing, via_graph=bool(sem.get("via_graph")),
                              graph_used=subgraph is not None,
                              graph=self.evidence(note_id, subgraph, titles, capped_by) if subgraph else None,
                              index_note=bool(meta.get("index_note")), asked_types=asked_types)
        return {**meta, "score_breakdown": breakdown.model_dump(), "explanation": explanation.model_dump()}
