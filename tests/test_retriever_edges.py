"""Edge and centrality bonuses: in hybrid mode a note linked from the other hits moves up; explanations name
the edges."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, at_cos, config, link, make_retriever, note_order

from mindnet.retrieval.query import QueryRequest

NOTES = [NoteSpec("a", [at_cos(0.9)]), NoteSpec("b", [at_cos(0.85)]), NoteSpec("c", [at_cos(0.8)]),
         NoteSpec("far", [at_cos(0.0)])]
EDGES = [link("a", "c"), link("b", "c", kind="depends_on", confidence=0.95, rule_id="inline:rel")]


@pytest.mark.parametrize(("mode", "edge_weight", "centrality_weight", "order"), [
    ("semantic", 0.3, 0.2, ["a", "b", "c", "far"]),
    ("hybrid", 0.0, 0.0, ["a", "b", "c", "far"]),      # no bonus: the fused similarity alone
    # c: 0.444 + 0.3 * 0.1324 = 0.484 passes b (0.472); with centrality it would pass a (0.5), the better hit
    # linking to it, so it stops just below a
    ("hybrid", 0.3, 0.0, ["a", "c", "b", "far"]),
    ("hybrid", 0.0, 0.2, ["a", "c", "b", "far"]),      # 0.444 + 0.2 * 0.2515 = 0.495 passes b
    ("hybrid", 0.3, 0.2, ["a", "c", "b", "far"]),
])
def test_bonuses_change_the_ranking_in_hybrid_mode(mode: str, edge_weight: float, centrality_weight: float,
                                                   order: list[str]) -> None:
    cfg = config(**{"scoring.edge_weight": edge_weight, "scoring.centrality_weight": centrality_weight})
    result = make_retriever(NOTES, EDGES, cfg=cfg).search(QueryRequest(query="q", mode=mode))
    assert note_order(result.nodes) == order


def test_edge_bonus_worked_numbers() -> None:
    # seeds with evidence a, b, c (S_sem 0.5, 0.4722, 0.4444; far scores 0 and is no hit): K = 3. Links into c
    # from a (1.0, relevance 1) and b (0.95, relevance 0.4722 / 0.5): B_edge = min(1, 1.0 + 0.95 * 0.94444) = 1.
    # B_cent: the walk restarting at a, b, c reaches c over links with r_a + r_b = 0.433437, damped by c's
    # global PageRank 1.723404 (a -> c, b -> c) -> 0.251501.
    # Uncapped 0.444444 + 0.3 * 1.0 + 0.2 * 0.251501 = 0.794744 > a's 0.5, so both bonuses are scaled by
    # (0.5 - 1e-6 - 0.444444) / 0.350300 = 0.158593.
    cfg = config(**{"scoring.edge_weight": 0.3, "scoring.centrality_weight": 0.2})
    nodes = make_retriever(NOTES, EDGES, cfg=cfg).search(QueryRequest(query="q", mode="hybrid")).nodes
    b = {n.node.metadata["note_id"]: n.node.metadata["score_breakdown"] for n in nodes}
    scale = (0.5 - 1e-6 - 4 / 9) / (0.3 * 1.0 + 0.2 * 0.251501)
    assert scale == pytest.approx(0.158593, abs=1e-5)
    assert b["c"]["graph_scale"] == pytest.approx(scale, abs=1e-5)
    assert b["c"]["edge_bonus"] == pytest.approx(1.0 * scale, abs=1e-5)
    assert b["c"]["centrality_bonus"] == pytest.approx(0.251501 * scale, abs=1e-5)
    assert b["c"]["total"] == pytest.approx(0.5 - 1e-6)
    assert (b["a"]["edge_bonus"], b["b"]["edge_bonus"], b["a"]["centrality_bonus"]) == (0.0, 0.0, 0.0)


def test_chance_correction_when_configured() -> None:
    # graph.chance 1: 2 of the 4 notes link to c, so chance gives K * 2 / 4 = 1.5 linkers:
    # B_edge = 1.0 + 0.95 * 0.94444 - 1.5 = 0.397222 (a note linked as often as chance predicts gains nothing)
    cfg = config(**{"scoring.edge_weight": 0.3, "scoring.centrality_weight": 0.0, "graph.chance": 1.0})
    nodes = make_retriever(NOTES, EDGES, cfg=cfg).search(QueryRequest(query="q", mode="hybrid")).nodes
    c = next(n for n in nodes if n.node.metadata["note_id"] == "c").node.metadata["score_breakdown"]
    assert c["edge_bonus"] / c["graph_scale"] == pytest.approx(0.397222, abs=1e-5)


def test_depth_zero_hybrid_has_no_bonus() -> None:
    request = QueryRequest(query="q", mode="hybrid", expand={"depth": 0})
    nodes = make_retriever(NOTES, EDGES).search(request).nodes
    breakdowns = [n.node.metadata["score_breakdown"] for n in nodes]
    assert [(b["edge_bonus"], b["centrality_bonus"]) for b in breakdowns] == [(0.0, 0.0)] * 4


def test_explanation_names_incoming_edges() -> None:
    nodes = make_retriever(NOTES, EDGES).search(QueryRequest(query="q", mode="hybrid")).nodes
    c = next(n for n in nodes if n.node.metadata["note_id"] == "c").node.metadata["explanation"]
    assert [(e["direction"], e["other_id"], e["other_title"], e["kind"], e["rule_id"], e["confidence"])
            for e in c["incoming"]] == [("incoming", "a", "A", "references", "explicit:wikilink", 1.0),
                                        ("incoming", "b", "B", "depends_on", "inline:rel", 0.95)]
    assert c["reasons"][-2:] == ["referenced by 'A' (references, explicit:wikilink, confidence 1.00)",
                                 "referenced by 'B' (depends_on, inline:rel, confidence 0.95)"]
    assert c["outgoing"] == []


def test_explanation_names_outgoing_edges() -> None:
    nodes = make_retriever(NOTES, EDGES).search(QueryRequest(query="q", mode="hybrid")).nodes
    a = next(n for n in nodes if n.node.metadata["note_id"] == "a").node.metadata["explanation"]
    assert a["incoming"] == []
    assert a["reasons"][-1] == "points to 'C' (references, explicit:wikilink, confidence 1.00)"


def test_explanation_leaves_out_edge_types_not_followed() -> None:
    cfg = config(**{"graph.chance": 1.0})
    nodes = make_retriever(NOTES, EDGES, cfg=cfg).search(
        QueryRequest(query="q", mode="hybrid", expand={"edge_types": ["references"]})).nodes
    c = next(n for n in nodes if n.node.metadata["note_id"] == "c").node.metadata
    assert [e["other_id"] for e in c["explanation"]["incoming"]] == ["a"]
    # only a -> c is followed: 1.0 linker is less than chance gives c (3 seeds x 2 of 4 notes link to c)
    assert c["score_breakdown"]["edge_bonus"] == 0.0
    assert c["explanation"]["graph"]["linked_from"] == ["a"]
