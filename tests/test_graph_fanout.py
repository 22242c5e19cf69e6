"""Graph expansion on CSR arrays: the same subgraph as the expansion it replaced (uncapped), fan-out caps per
note and per query by edge strength, and PageRank on arrays equal to networkx's."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from mindnet.errors import ConfigError
from mindnet.indexing.edges import edge_key
from mindnet.retrieval.graph import STRUCTURAL, EdgeIndex, FanOut, GraphStats, expand, link_flow, note_of
from mindnet.settings import RetrieverConfig, load_yaml_model


def edge(src: str, dst: str, conf: float = 1.0, kind: str = "references", *, resolved: bool = True) -> dict:
    source = f"{src}#c01"
    return {"edge_id": edge_key(source, dst, kind), "source_id": source, "target_id": dst, "kind": kind,
            "rule_id": f"test:{kind}", "confidence": conf, "note_id": src, "scope": "chunk", "resolved": resolved,
            "target_text": None}


def old_expand(edges: list[dict], seeds: list[str], depth: int, kinds: list[str]) -> tuple[set, dict]:
    """The expansion before CSR (bc57eb1's EdgeIndex.edges_for + expand loop), kept as the reference."""
    by_note: dict[str, list] = {}
    by_target: dict[str, list] = {}
    for e in edges:
        if e["kind"] in STRUCTURAL or not e["resolved"]:
            continue
        by_note.setdefault(e["note_id"], []).append(e)
        by_target.setdefault(note_of(e["target_id"]), []).append(e)
    visited: set[str] = set()
    frontier, seen, graph = list(seeds), set(), {}
    for _ in range(depth):
        visited.update(frontier)
        found: set[str] = set()
        loaded = [e for n in frontier for e in (*by_note.get(n, ()), *by_target.get(n, ())) if e["kind"] in kinds]
        for e in loaded:
            if e["edge_id"] in seen:
                continue
            seen.add(e["edge_id"])
            src, dst = e["note_id"], note_of(e["target_id"])
            if src == dst:
                continue
            graph[(src, dst)] = max(graph.get((src, dst), 0.0), e["confidence"])
            found.update((src, dst))
        frontier = sorted(found - visited)
        if not frontier:
            break
    return seen, graph


def random_edges(seed: int, notes: int = 40, count: int = 200) -> list[dict]:
    rnd = random.Random(seed)
    kinds = ["references", "mentions", "related_to", "next"]
    out = {}
    for _ in range(count):
        a, b = rnd.sample(range(notes), 2)
        target = f"n{b}" if rnd.random() < 0.8 else f"n{b}#c0{rnd.randint(1, 3)}"
        e = edge(f"n{a}", target, round(rnd.choice([0.3, 0.5, 0.7, 0.9, 1.0]), 2), rnd.choice(kinds),
                 resolved=rnd.random() > 0.05)
        out[e["edge_id"]] = e
    out["self"] = {**edge("n1", "n1#c02"), "edge_id": "self"}            # a link inside one note
    return list(out.values())


def picked(sub) -> tuple[set, dict]:
    graph = {(a, b): d["confidence"] for a, b, d in sub.graph.edges(data=True)}
    return {e["edge_id"] for e in sub.edges}, graph


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_uncapped_csr_expansion_equals_the_old_expansion(seed: int, depth: int) -> None:
    edges = random_edges(seed)
    kinds = ["references", "mentions", "related_to"]
    seeds = ["n3", "n7#c01", "n11"]
    sub = expand(EdgeIndex(edges), seeds, depth, kinds)
    ids, graph = old_expand(edges, [note_of(s) for s in seeds], depth, kinds)
    ids.discard("self")
    assert picked(sub) == (ids, graph)
    assert sub.edges and set(sub.seeds) == {"n3", "n7", "n11"}


def hub_edges() -> list[dict]:
    """A MOC linking 30 notes with falling confidence, one note linking into the MOC, a second hop beyond."""
    edges = [edge("moc", f"x{i:02d}", round(1.0 - i / 100, 2)) for i in range(30)]
    edges += [edge("a", "moc", 0.975), edge("x00", "far", 0.9), edge("x29", "far2", 0.9)]
    return edges


def test_a_note_follows_only_its_strongest_links() -> None:
    sub = expand(EdgeIndex(hub_edges()), ["moc"], 1, ["references"], caps=FanOut(per_note=5))
    # in and out count together: a -> moc (0.975) is among the moc's five strongest
    assert sorted(sub.graph.edges) == [("a", "moc"), ("moc", "x00"), ("moc", "x01"), ("moc", "x02"),
                                       ("moc", "x03")]


def test_a_query_keeps_its_strongest_edges_nearer_hops_first() -> None:
    sub = expand(EdgeIndex(hub_edges()), ["moc"], 2, ["references"], caps=FanOut(per_query=4))
    assert sorted(sub.graph.edges) == [("a", "moc"), ("moc", "x00"), ("moc", "x01"), ("moc", "x02")]
    sub = expand(EdgeIndex(hub_edges()), ["moc"], 2, ["references"], caps=FanOut(per_note=2, per_query=5))
    # hop 1: the moc's two strongest, x00 (1.0) and x01 (0.99); hop 2: x00 -> far (0.9), x01 has no other link
    assert sorted(sub.graph.edges) == [("moc", "x00"), ("moc", "x01"), ("x00", "far")]
    assert len(sub.edges) <= 5


def test_the_caps_bound_a_dense_graph() -> None:
    edges = random_edges(7, notes=60, count=1500)
    sub = expand(EdgeIndex(edges), ["n1", "n2"], 2, ["references", "mentions", "related_to"],
                 caps=FanOut(per_note=6, per_query=40))
    assert 0 < len(sub.edges) <= 40
    uncapped = expand(EdgeIndex(edges), ["n1", "n2"], 2, ["references", "mentions", "related_to"])
    assert len(uncapped.edges) > 200


def test_retriever_yaml_sets_the_caps(tmp_path) -> None:
    path = tmp_path / "retriever.yaml"
    path.write_text("expand:\n  max_edges_per_note: 7\n  max_edges: 90\n", encoding="utf-8")
    config = load_yaml_model(path, RetrieverConfig)
    assert (config.expand.max_edges_per_note, config.expand.max_edges) == (7, 90)
    path.write_text("expand:\n  max_edges_per_note: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="max_edges_per_note"):
        load_yaml_model(path, RetrieverConfig)
    shipped = RetrieverConfig()
    assert shipped.expand.max_edges_per_note and shipped.expand.max_edges


@pytest.mark.parametrize("seed", [1, 2])
def test_global_pagerank_on_arrays_equals_networkx(seed: int) -> None:
    edges = [e for e in random_edges(seed) if e["resolved"] and e["kind"] not in STRUCTURAL]
    stats = GraphStats(edges, 50)
    graph = nx.DiGraph()
    for e in edges:
        a, b = e["note_id"], note_of(e["target_id"])
        if a != b and (not graph.has_edge(a, b) or graph[a][b]["confidence"] < e["confidence"]):
            graph.add_edge(a, b, confidence=e["confidence"])
    ranks = nx.pagerank(graph, alpha=0.85, weight="confidence", max_iter=200, tol=1e-8)
    assert stats.pr_rel == pytest.approx({n: r * graph.number_of_nodes() for n, r in ranks.items()}, rel=1e-9)
    assert stats.in_degree == dict(graph.in_degree()) and stats.out_degree == dict(graph.out_degree())
    assert stats.notes == 50


def test_link_flow_on_arrays_equals_the_networkx_walk() -> None:
    edges = [e for e in random_edges(3) if e["resolved"] and e["kind"] not in STRUCTURAL]
    sub = expand(EdgeIndex(edges), ["n1", "n4"], 2, ["references", "mentions", "related_to"])
    stats = GraphStats(edges, 40, hub_degree=3.0)
    seeds = {"n1": 1.0, "n4": 0.5}
    g = sub.graph.copy()
    for a, _, d in g.edges(data=True):
        d["w"] = d["confidence"] * stats.spec_out(a)
    ranks = nx.pagerank(g, alpha=0.85, personalization=seeds, weight="w", max_iter=200, tol=1e-8)
    out = dict(g.out_degree(weight="w"))
    expected: dict[str, float] = {}
    for a, b, d in g.edges(data=True):
        expected[b] = expected.get(b, 0.0) + ranks[a] * d["w"] / out[a]
    assert link_flow(sub.graph, seeds, stats) == pytest.approx(expected, rel=1e-9)


def eager_ends(edges: list[dict]) -> tuple[dict, dict]:
    """Edges grouped by target note and by source note, as the decoded subgraph groups them."""
    into: dict[str, list[dict]] = {}
    out: dict[str, list[dict]] = {}
    for e in edges:
        src, dst = e["note_id"], note_of(e["target_id"])
        if src != dst:
            into.setdefault(dst, []).append(e)
            out.setdefault(src, []).append(e)
    return into, out


@pytest.mark.parametrize("seed", [1, 4])
@pytest.mark.parametrize("caps", [FanOut(), FanOut(per_note=3, per_query=20)])
def test_lazily_decoded_edges_equal_the_decoded_ones(seed: int, caps: FanOut) -> None:
    """The CSR path decodes edge payloads only when asked: each note's incoming and outgoing edges, the graph's
    confidences (a merged default kind shows with its own confidence) and `edges` equal decoding them all."""
    edges = random_edges(seed)
    for e in edges[::4]:         # a link that carries its type's default kind, as the import merges them
        e.update(kinds=[e["kind"], "related_to"], default_rule="default:related_to", default_confidence=0.35)
    kinds = ["mentions", "related_to"]       # references only through their merged default kind
    index = EdgeIndex(edges)
    lazy = expand(index, ["n3", "n7"], 2, kinds, caps=caps)
    eager = expand(index, ["n3", "n7"], 2, kinds, caps=caps)
    decoded = eager.edges                     # decodes every row once
    into, out = eager_ends(decoded)
    assert any(e["rule_id"] == "default:related_to" for e in decoded)    # the fixture has merged defaults
    for note in sorted(lazy.notes) + ["nowhere"]:
        assert lazy.incoming(note) == into.get(note, [])
        assert lazy.outgoing(note) == out.get(note, [])
    strongest: dict[tuple[str, str], float] = {}
    for e in decoded:
        pair = (e["note_id"], note_of(e["target_id"]))
        strongest[pair] = max(strongest.get(pair, -1.0), float(e["confidence"]))
    assert {(a, b): d["confidence"] for a, b, d in lazy.graph.edges(data=True)} == strongest
    assert lazy.edges == decoded
