"""retriever_weight (W_type) multiplies the semantic score: same similarity, other type, other rank."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, at_cos, make_retriever, note_order

from mindnet.retrieval.query import QueryRequest


def notes(concept_weight: float, decision_weight: float) -> list[NoteSpec]:
    return [NoteSpec("idea", [at_cos(0.8)], type="concept", weight=concept_weight),
            NoteSpec("choice", [at_cos(0.8)], type="decision", weight=decision_weight),
            NoteSpec("far", [at_cos(0.0)])]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
@pytest.mark.parametrize(("concept_weight", "decision_weight", "order"), [
    (0.6, 1.0, ["choice", "idea", "far"]),
    (1.0, 0.6, ["idea", "choice", "far"]),
    (1.0, -0.5, ["idea", "choice", "far"]),
])
def test_retriever_weight_decides_between_equally_similar_notes(
        mode: str, concept_weight: float, decision_weight: float, order: list[str]) -> None:
    result = make_retriever(notes(concept_weight, decision_weight)).search(
        QueryRequest(query="q", mode=mode, expand={"depth": 0}))
    assert note_order(result.nodes) == order


@pytest.mark.parametrize(("weight", "total"), [(0.6, 0.48), (1.0, 0.8), (2.0, 1.6), (-1.0, 0.0)])
def test_semantic_term_is_similarity_times_weight(weight: float, total: float) -> None:
    # the candidates' cosines span 0.0 .. 1.0, so n's scaled S_sem is its cosine, 0.8
    anchors = [NoteSpec("top", [at_cos(1.0)]), NoteSpec("bottom", [at_cos(0.0)])]
    result = make_retriever([NoteSpec("n", [at_cos(0.8)], weight=weight), *anchors]).search(
        QueryRequest(query="q", mode="semantic"))
    b = next(n for n in result.nodes if n.node.metadata["note_id"] == "n").node.metadata["score_breakdown"]
    assert (b["retriever_weight"], b["semantic_term"], b["total"]) == (weight, pytest.approx(total),
                                                                        pytest.approx(total))


def test_explanation_names_type_and_weight() -> None:
    result = make_retriever(notes(0.6, 1.0)).search(QueryRequest(query="q", mode="semantic"))
    reasons = {n.node.metadata["note_id"]: n.node.metadata["explanation"]["reasons"][0] for n in result.nodes}
    scaled = "(cosine 0.800, scaled between the candidates' lowest and highest)"
    assert reasons["idea"] == f"semantic match 1.000 {scaled} x type 'concept' weight 0.6 -> 0.600"
    assert reasons["choice"] == f"semantic match 1.000 {scaled} x type 'decision' weight 1 -> 1.000"
