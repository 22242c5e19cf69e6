"""The score formula against worked numbers, and the sentences of an explanation."""

from __future__ import annotations

import pytest

from mindnet.retrieval.scoring import EdgeRef, compute_score, explain
from mindnet.settings import ScoringWeights

WEIGHTS = ScoringWeights(semantic_weight=1.0, edge_weight=0.3, centrality_weight=0.2)


@pytest.mark.parametrize(("semantic", "w_type", "edge", "cent", "terms", "total"), [
    # total = 1.0 * S_sem * max(W_type, 0) + 0.3 * B_edge + 0.2 * B_cent
    (0.8, 0.6, 0.5, 0.25, (0.48, 0.15, 0.05), 0.68),
    (0.8, 1.0, 0.0, 0.0, (0.8, 0.0, 0.0), 0.8),
    (0.5, 2.0, 1.0, 1.0, (1.0, 0.3, 0.2), 1.5),
    (0.9, -1.0, 0.5, 0.0, (0.0, 0.15, 0.0), 0.15),     # a negative type weight only removes the semantic term
])
def test_compute_score_worked_numbers(semantic: float, w_type: float, edge: float, cent: float,
                                      terms: tuple[float, float, float], total: float) -> None:
    b = compute_score(semantic=semantic, retriever_weight=w_type, edge_bonus=edge, centrality_bonus=cent,
                      weights=WEIGHTS)
    assert (b.semantic_term, b.edge_term, b.centrality_term) == pytest.approx(terms)
    assert b.total == pytest.approx(total)


def test_compute_score_uses_the_configured_weights() -> None:
    weights = ScoringWeights(semantic_weight=2.0, edge_weight=0.5, centrality_weight=0.0)
    b = compute_score(semantic=0.5, retriever_weight=0.5, edge_bonus=0.4, centrality_bonus=1.0,
                      weights=weights)
    assert (b.semantic_weight, b.edge_weight, b.centrality_weight) == (2.0, 0.5, 0.0)
    assert b.total == pytest.approx(0.7)


@pytest.mark.parametrize(("direction", "title", "sentence"), [
    ("incoming", "Qdrant", "referenced by 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
    ("outgoing", "Qdrant", "points to 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
    ("outgoing", None, "points to 'qdrant' (references, explicit:wikilink, confidence 0.95)"),
])
def test_edge_sentence_names_direction_kind_rule_confidence(direction: str, title: str | None,
                                                            sentence: str) -> None:
    ref = EdgeRef(direction=direction, kind="references", rule_id="explicit:wikilink", confidence=0.95,
                  other_id="qdrant", other_title=title)
    assert ref.sentence() == sentence


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"direction": "outgoing", "section": "Setup"},
     "links to the section 'Setup' of 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
    ({"direction": "outgoing", "section": "Install#Setup"},
     "links to the section 'Setup' of 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
    ({"direction": "outgoing", "section": "^f63f5a"},
     "links to the block '^f63f5a' of 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
    ({"direction": "incoming", "section": "Setup", "here": True},
     "referenced by 'Qdrant' (links to the section 'Setup', this passage) (references, explicit:wikilink, "
     "confidence 0.95)"),
    ({"direction": "incoming", "section": "Setup"},
     "referenced by 'Qdrant' (links to the section 'Setup') (references, explicit:wikilink, confidence 0.95)"),
    ({"direction": "outgoing", "resolved_by": "alias", "written": "AI"},
     "points to 'Qdrant', resolved through the alias 'AI' (references, explicit:wikilink, confidence 0.95)"),
    ({"direction": "incoming", "resolved_by": "title", "written": "Vector DB"},
     "referenced by 'Qdrant', resolved through the title 'Vector DB' (references, explicit:wikilink, "
     "confidence 0.95)"),
    ({"direction": "outgoing", "resolved_by": "name", "written": "qdrant"},    # Obsidian's own rule: not named
     "points to 'Qdrant' (references, explicit:wikilink, confidence 0.95)"),
])
def test_edge_sentence_names_the_section_and_a_name_obsidian_would_not_resolve(fields, sentence: str) -> None:
    ref = EdgeRef(kind="references", rule_id="explicit:wikilink", confidence=0.95, other_id="qdrant",
                  other_title="Qdrant", **fields)
    assert ref.sentence() == sentence


def test_explanation_lists_every_bonus() -> None:
    b = compute_score(semantic=0.8, dense=0.9, lexical=0.7, retriever_weight=0.6, edge_bonus=0.5,
                      centrality_bonus=0.25, weights=WEIGHTS)
    inc = EdgeRef(direction="incoming", kind="depends_on", rule_id="inline:rel", confidence=0.95,
                  other_id="a", other_title="A")
    e = explain(b, note_type="concept", incoming=[inc], outgoing=[], via_graph=True, graph_used=True)
    assert e.reasons == [
        "semantic match 0.800 (dense 0.900, lexical 0.700) x type 'concept' weight 0.6 -> 0.480",
        "found through graph expansion from the vector hits",
        "edge bonus 0.50 (linked from other hits) -> +0.150",
        "central in the result subgraph (PageRank 0.25) -> +0.050",
        "referenced by 'A' (depends_on, inline:rel, confidence 0.95)",
    ]


def test_explanation_says_when_the_graph_was_not_consulted() -> None:
    b = compute_score(semantic=0.8, dense=0.85, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0,
                      weights=WEIGHTS)
    e = explain(b, note_type="decision", incoming=[], outgoing=[], via_graph=False, graph_used=False)
    assert e.reasons == ["semantic match 0.800 (cosine 0.850, scaled between the candidates' lowest and highest) "
                         "x type 'decision' weight 1 -> 0.800",
                         "graph not consulted (semantic mode or depth 0)"]


def test_explanation_says_an_index_note_is_damped() -> None:
    b = compute_score(semantic=0.9, retriever_weight=0.3, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    e = explain(b, note_type="index", incoming=[], outgoing=[], via_graph=False, graph_used=False, index_note=True)
    assert e.reasons[:2] == ["semantic match 0.900 x type 'index' weight 0.3 -> 0.270",
                             "index note (mostly links to other notes): damped (x0.3)"]
