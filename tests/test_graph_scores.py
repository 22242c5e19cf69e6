"""Hub-robust graph scores with worked numbers: specificity, vault-wide stats, B_edge, link flow (B_cent), the
lift cap and the plain-word explanation."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, at_cos, config, link, make_retriever, note_order

from mindnet.retrieval.graph import GraphStats, Subgraph, link_flow, specificity
from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.scorer import MindnetScorer, lift_ceilings
from mindnet.retrieval.scoring import capped, compute_score, graph_sentences
from mindnet.settings import ScoringWeights


def edge(src: str, dst: str, confidence: float = 1.0, kind: str = "references") -> dict:
    return {"note_id": src, "target_id": dst, "kind": kind, "confidence": confidence, "resolved": True}


def subgraph(edges: list[tuple[str, str, float]], seeds: dict[str, float], stats: GraphStats | None = None
             ) -> Subgraph:
    sub = Subgraph(seeds=seeds, stats=stats or GraphStats.empty())
    sub.graph.add_nodes_from(seeds)
    for src, dst, conf in edges:
        sub.graph.add_edge(src, dst, confidence=conf)
    return sub


@pytest.mark.parametrize(("degree", "factor"), [(0, 1.0), (5, 1.0), (10, 1.0), (40, 0.5), (160, 0.25)])
def test_specificity_is_one_up_to_the_hub_degree_then_falls_with_the_square_root(degree: int,
                                                                               factor: float) -> None:
    assert specificity(degree, 10) == pytest.approx(factor)


def test_graph_stats_count_distinct_neighbours_and_skip_structure() -> None:
    stats = GraphStats([edge("a", "t#c01"), edge("a", "t", 0.7, "related_to"), edge("b", "t"),
                        edge("a", "a#c02", kind="next"), edge("t", "x")])
    assert (stats.in_degree["t"], stats.out_degree["a"], stats.out_degree["t"]) == (2, 1, 1)


def test_global_pagerank_is_relative_to_the_average_note() -> None:
    # a -> c, b -> c; c has no links, so its walk jumps anywhere: r_a = r_b = (1 - r_c) / 2 and
    # r_c = 0.05 + 0.85 (r_a + r_b) + 0.85 r_c / 3  ->  r_c = 0.45 / 0.78333 = 0.574468; x 3 notes = 1.723404
    stats = GraphStats([edge("a", "c"), edge("b", "c", 0.95)])
    assert stats.pr_rel["c"] == pytest.approx(1.723404, abs=1e-5)
    assert stats.hub_damping("c") == pytest.approx(1 / 1.723404, abs=1e-5)
    assert stats.hub_damping("a") == 1.0 and stats.hub_damping("unknown") == 1.0


def test_edge_bonus_weights_relevance_and_the_source_s_specificity() -> None:
    # a links to 40 notes (specificity 0.5), b only to t; b is half as relevant as a:
    # B_edge(t) = 1.0 * 1.0 * 0.5 + 0.8 * 0.5 * 1.0 = 0.9 (one specific link from the best hit alone would be 1.0)
    edges = [edge("a", "t"), *(edge("a", f"x{i}") for i in range(39)), edge("b", "t", 0.8)]
    sub = subgraph([("a", "t", 1.0), ("b", "t", 0.8)], {"a": 0.9, "b": 0.45}, GraphStats(edges, 400))
    assert sub.edge_bonus("t") == pytest.approx(0.9)
    # with the chance correction on (graph.chance 1): 2 of 400 notes link to t, so chance gives
    # 2 seeds x 2 / 400 = 0.01 linkers: 0.9 - 0.01
    sub = subgraph([("a", "t", 1.0), ("b", "t", 0.8)], {"a": 0.9, "b": 0.45}, GraphStats(edges, 400, chance=1.0))
    assert sub.edge_bonus("t") == pytest.approx(0.89)


def test_edge_bonus_is_at_most_one() -> None:
    # two specific links from equally relevant hits: 1.0 + 1.0, capped at 1
    sub = subgraph([("a", "t", 1.0), ("b", "t", 1.0)], {"a": 0.9, "b": 0.9}, GraphStats([edge("a", "t")], 10))
    assert sub.edge_bonus("t") == 1.0


def test_edge_bonus_chance_correction_cancels_a_note_most_of_the_vault_links_to() -> None:
    # 3 of 4 notes link to t; both seeds linking to it (1.0 + 0.8 * 0.5 = 1.4) is what chance predicts
    # (2 x 3 / 4 = 1.5): nothing with graph.chance 1, min(1, 1.4) = 1 without the correction
    edges = [edge("a", "t"), edge("b", "t", 0.8), edge("c", "t")]
    seeds = {"a": 0.9, "b": 0.45}
    assert subgraph([("a", "t", 1.0), ("b", "t", 0.8)], seeds, GraphStats(edges, chance=1.0)).edge_bonus("t") == 0.0
    assert subgraph([("a", "t", 1.0), ("b", "t", 0.8)], seeds, GraphStats(edges)).edge_bonus("t") == 1.0


def test_edge_bonus_damps_a_hub_target() -> None:
    # t has 40 incoming links among 400 notes (specificity sqrt(10 / 40) = 0.5): (1.0 + 0.8 * 0.5) * 0.5 = 0.7;
    # with graph.chance 1 (chance 2 x 40 / 400 = 0.2 linkers): (1.4 - 0.2) * 0.5 = 0.6
    edges = [edge("a", "t"), edge("b", "t", 0.8), *(edge(f"y{i}", "t") for i in range(38))]
    for chance, expected in ((0.0, 0.7), (1.0, 0.6)):
        sub = subgraph([("a", "t", 1.0), ("b", "t", 0.8)], {"a": 0.9, "b": 0.45}, GraphStats(edges, 400,
                                                                                             chance=chance))
        assert sub.edge_bonus("t") == pytest.approx(expected)


def test_link_flow_counts_only_what_arrives_over_links() -> None:
    # seed a -> x; x has no links, so its walk restarts at a: r_a = 0.15 + 0.85 r_x, r_x = 0.85 r_a
    # -> r_a = 1 / 1.85 = 0.540541, all of which flows to x; the seed itself receives nothing over a link
    sub = subgraph([("a", "x", 1.0)], {"a": 1.0})
    assert link_flow(sub.graph, sub.seeds) == pytest.approx({"x": 1 / 1.85})
    assert sub.centrality_bonus("a") == 0.0


def test_centrality_has_no_fixed_bonus_for_the_most_central_note() -> None:
    # two seeds, each linking to its own note: by symmetry r_a = r_b = K / 2 with K = 0.15 + 0.85 * 0.85 K
    # -> K = 0.540541; x and y each receive 0.270270 - not the 1.0 a max-normalisation would hand out
    sub = subgraph([("a", "x", 1.0), ("b", "y", 1.0)], {"a": 1.0, "b": 1.0})
    assert (sub.centrality_bonus("x"), sub.centrality_bonus("y")) == pytest.approx((0.270270, 0.270270), abs=1e-5)


def test_centrality_of_a_globally_central_note_is_damped() -> None:
    stats = GraphStats([edge("a", "x"), *(edge(f"y{i}", "x") for i in range(8)), edge("b", "z")])
    sub = subgraph([("a", "x", 1.0)], {"a": 1.0}, stats)
    assert stats.pr_rel["x"] > 1
    assert sub.centrality_bonus("x") == pytest.approx((1 / 1.85) / stats.pr_rel["x"])


WEIGHTS = ScoringWeights(semantic_weight=1.0, edge_weight=0.3, centrality_weight=0.2)


def test_lift_cap_keeps_a_linked_note_below_the_hit_that_led_to_it() -> None:
    # a (0.5) links to c (0.2 + 0.3 * 1.0 = 0.5 + 0.2 * 0.5 = 0.6): c may reach a, not pass it
    sub = subgraph([("a", "c", 1.0)], {"a": 0.5, "c": 0.2})
    a = compute_score(semantic=0.5, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    c = compute_score(semantic=0.2, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.5, weights=WEIGHTS)
    assert c.total == pytest.approx(0.6)
    assert lift_ceilings([("a", a), ("c", c)], sub) == [(None, None), (pytest.approx(0.5 - 1e-6), "a")]


def test_lift_cap_leaves_a_semantically_better_note_alone() -> None:
    sub = subgraph([("a", "c", 1.0)], {"a": 0.3, "c": 0.4})
    a = compute_score(semantic=0.3, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    c = compute_score(semantic=0.4, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    assert lift_ceilings([("a", a), ("c", c)], sub) == [(None, None), (None, None)]


def test_a_note_lifted_by_weaker_hits_stays_below_a_better_hit_and_says_so() -> None:
    # a (0.9) does not link to c; b (0.5) does. c (0.8 + 0.3 * 1.0 = 1.1) is already above b, the only hit
    # linking to it, so the best hit above it, a, caps it (0.9 - 1e-6): links from weaker hits do not lift a
    # note over a better one (measured: without this, MuSiQue-100 depth 1 lost MRR@10, 0.9108 -> 0.9028)
    sub = subgraph([("b", "c", 1.0)], {"a": 0.9, "b": 0.5, "c": 0.8})
    a = compute_score(semantic=0.9, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    b = compute_score(semantic=0.5, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    c = compute_score(semantic=0.8, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    assert c.total == pytest.approx(1.1)
    assert lift_ceilings([("a", a), ("b", b), ("c", c)], sub)[2] == (pytest.approx(0.9 - 1e-6), "a")
    # the explanation does not claim that a led here
    cut = capped(c, 0.9 - 1e-6, WEIGHTS)
    evidence = MindnetScorer.evidence("c", sub, {"a": "A"}, "a")
    assert evidence.capped_below == "A" and evidence.capped_below_links_here is False
    assert graph_sentences(cut, evidence)[-1] == (
        "graph bonus cut to 33%: kept below 'A', a better hit (the hits linking here score lower: links from "
        "weaker hits do not lift a note over a better one)")
    linked = subgraph([("b", "c", 1.0), ("a", "c", 1.0)], {"a": 0.9, "b": 0.5, "c": 0.8})
    assert MindnetScorer.evidence("c", linked, {"a": "A"}, "a").capped_below_links_here is True


def test_a_near_equal_match_of_its_own_may_pass_the_hit_that_led_to_it() -> None:
    # a (0.90) links to c (0.86 + 0.3 * 1.0 = 1.16). 0.86 / 0.90 = 0.956: with graph.near_share 0.95 c is a
    # near-equal match in its own right and the link lifts it past a; at 0.97 it is held at 0.9 - 1e-6
    sub = subgraph([("a", "c", 1.0)], {"a": 0.9, "c": 0.86})
    a = compute_score(semantic=0.9, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    c = compute_score(semantic=0.86, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    assert c.total == pytest.approx(1.16)
    assert lift_ceilings([("a", a), ("c", c)], sub, near_share=0.95)[1] == (None, None)
    assert lift_ceilings([("a", a), ("c", c)], sub, near_share=0.97)[1] == (pytest.approx(0.9 - 1e-6), "a")
    # a note with no semantic evidence is held whatever the share, even below a hit without any either
    z = compute_score(semantic=0.0, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    zero = compute_score(semantic=0.0, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    held = subgraph([("a", "z", 1.0)], {"a": 0.0})
    assert lift_ceilings([("a", zero), ("z", z)], held, near_share=0.5)[1] == (pytest.approx(-1e-6), "a")


def test_a_near_equal_match_may_pass_its_leader_but_not_the_hit_that_held_the_leader() -> None:
    # a (0.90) is the best hit and links to nothing. b (0.82) links to c; the graph lifts b (0.82 + 0.3 = 1.12),
    # held at a's 0.9 - 1e-6 (no hit links to b, so the best hit above it holds it). c (0.80 + 0.3 = 1.10) is
    # near-equal to b (0.80 / 0.82 = 0.976 >= 0.95): it may pass b, and is held where b was, below a (0.80 / 0.90
    # = 0.889: no near-equal of a). Before, c passed a as well (measured on MuSiQue-100: same-titled paragraphs
    # linked by mentions, one lifting the next over the question's own paragraph; depth 1 MRR@10 0.9083 -> 0.9158)
    sub = subgraph([("b", "c", 1.0)], {"a": 0.9, "b": 0.82, "c": 0.8})
    a = compute_score(semantic=0.9, retriever_weight=1.0, edge_bonus=0.0, centrality_bonus=0.0, weights=WEIGHTS)
    b = compute_score(semantic=0.82, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    c = compute_score(semantic=0.8, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.0, weights=WEIGHTS)
    ceilings = lift_ceilings([("a", a), ("b", b), ("c", c)], sub, near_share=0.95)
    assert ceilings[1] == (pytest.approx(0.9 - 1e-6), "a")
    assert ceilings[2] == (pytest.approx(0.9 - 1e-6), "a")
    # when the leader itself was not held, the near-equal note passes it freely (the book-note case above)
    assert lift_ceilings([("b", b), ("c", c)], subgraph([("b", "c", 1.0)], {"b": 0.82, "c": 0.8}),
                         near_share=0.95)[1] == (None, None)


def test_the_scorer_reads_near_share_from_the_config() -> None:
    assert MindnetScorer().near_share == 0.95
    assert MindnetScorer.from_config(config(**{"graph.near_share": 1.0})).near_share == 1.0


NOTES = [NoteSpec("a", [at_cos(0.9)]), NoteSpec("b", [at_cos(0.85)]), NoteSpec("c", [at_cos(0.8)]),
         NoteSpec("far", [at_cos(0.0)])]


def test_a_note_without_semantic_evidence_never_outranks_the_hit_linking_to_it() -> None:
    cfg = config(**{"scoring.edge_weight": 5.0, "scoring.centrality_weight": 5.0})
    nodes = make_retriever(NOTES, [link("a", "far")], cfg=cfg).search(QueryRequest(query="q", mode="hybrid")).nodes
    assert note_order(nodes)[:2] == ["a", "far"]
    far = nodes[1].node.metadata
    assert far["score_breakdown"]["semantic"] == 0.0
    assert far["score_breakdown"]["total"] == pytest.approx(0.5 - 1e-6)
    assert far["explanation"]["graph"]["capped_below"] == "A"


def test_explanation_says_who_links_and_that_a_hub_is_damped() -> None:
    hubs = [NoteSpec(f"h{i}", [at_cos(0.0)]) for i in range(38)]
    edges = [link("a", "c"), link("b", "c", kind="depends_on", confidence=0.95, rule_id="inline:rel"),
             *(link(f"h{i}", "c") for i in range(38))]
    nodes = make_retriever(NOTES + hubs, edges).search(QueryRequest(query="q", mode="hybrid", top_k=5)).nodes
    c = next(n for n in nodes if n.node.metadata["note_id"] == "c").node.metadata["explanation"]
    assert c["graph"]["linked_from"] == ["a", "b"]
    assert (c["graph"]["in_links"], c["graph"]["hub_factor"]) == (40, 0.5)
    assert c["reasons"][1].startswith("linked from 2 of the 3 best hits ('A', 'B') -> edge +")
    assert "hub with 40 incoming links: damped (x0.50)" in c["reasons"]
