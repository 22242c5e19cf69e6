"""Graph adapter: loading the subgraph, the edge bonus, personalised PageRank."""

from __future__ import annotations

from collections.abc import Iterator

import networkx as nx
import pytest
from retrieval_fixtures import PREFIX, NoteSpec, build_index, link, unit

from mindnet.indexing.edges import Edge
from mindnet.retrieval.graph import EdgeIndex, Subgraph, expand, note_of, personalized_pagerank
from mindnet.retrieval.graph_file import build
from mindnet.store.factory import TemporaryEdgeStore


@pytest.mark.parametrize(("node_id", "note"), [("a#c01", "a"), ("dir/x y#c12", "dir/x y"), ("a", "a"),
                                               ("a#c1", "a#c1"), ("a#heading", "a#heading")])
def test_note_of_strips_the_chunk_suffix(node_id: str, note: str) -> None:
    assert note_of(node_id) == note


def graph(edges: list[tuple[str, str, float]], seeds: dict[str, float]) -> Subgraph:
    sub = Subgraph(seeds=seeds)
    sub.graph.add_nodes_from(seeds)
    for src, dst, conf in edges:
        sub.graph.add_edge(src, dst, confidence=conf)
    return sub


@pytest.mark.parametrize(("edges", "seeds", "note", "bonus"), [
    # confidences of edges from seed notes into the note (x the seed's relevance), at most 1
    ([("a", "t", 0.5), ("b", "t", 0.3)], {"a": 1, "b": 1, "c": 1}, "t", 0.8),
    ([("a", "t", 1.0), ("b", "t", 0.5)], {"a": 1, "b": 1, "c": 1}, "t", 1.0),
    ([("a", "t", 0.4), ("z", "t", 1.0)], {"a": 1, "b": 1}, "t", 0.4),       # z is not a seed
    ([("a", "t", 0.4)], {"a": 0.5, "t": 1}, "t", 0.2),                       # a seed may receive a bonus
    ([("a", "t", 1.0)], {"a": 1}, "a", 0.0),                                 # outgoing edges give none
    ([("a", "t", 1.0)], {"a": 1}, "unknown", 0.0),
])
def test_edge_bonus_definition(edges: list, seeds: dict, note: str, bonus: float) -> None:
    assert graph(edges, seeds).edge_bonus(note) == pytest.approx(bonus)


def test_pagerank_is_normalised_to_one() -> None:
    g = nx.DiGraph()
    g.add_edge("a", "b", confidence=1.0)
    g.add_edge("a", "c", confidence=0.5)
    g.add_edge("c", "b", confidence=1.0)
    ranks = personalized_pagerank(g, {"a": 1.0})
    assert set(ranks) == {"a", "b", "c"}
    assert max(ranks.values()) == pytest.approx(1.0)


def test_pagerank_restarts_at_the_seeds() -> None:
    # a -> x, x dangling (jumps back to the seed a): r_x = 0.85 * r_a, so normalised a = 1, x = 0.85;
    # b -> y is unreachable from the seed
    g = nx.DiGraph()
    g.add_edge("a", "x", confidence=1.0)
    g.add_edge("b", "y", confidence=1.0)
    ranks = personalized_pagerank(g, {"a": 1.0})
    assert ranks == pytest.approx({"a": 1.0, "x": 0.85, "b": 0.0, "y": 0.0})


def test_pagerank_of_a_graph_without_edges_is_empty() -> None:
    g = nx.DiGraph()
    g.add_nodes_from(["a", "b"])
    assert personalized_pagerank(g, {"a": 1.0}) == {}


@pytest.fixture
def index() -> Iterator[EdgeIndex]:
    """The link graph of a small index, read from a real store as the retriever reads it."""
    store = TemporaryEdgeStore(PREFIX)
    notes = [NoteSpec(n, [unit(1)]) for n in ("a", "b", "c", "d", "e")]
    edges = [link("a", "b"), link("b", "c", kind="depends_on"), link("c", "d"),
             link("a", "e", kind="mentions", confidence=0.4, rule_id="mention:title"),
             link("a", "e", kind="related_to", confidence=0.7, rule_id="edge_defaults:concept"),
             Edge("a#c01", "nowhere", "references", "explicit:wikilink", 1.0, "a", resolved=False),
             Edge("a#c01", "a#c02", "next", "structure:order", 1.0, "a")]
    build_index(store, notes, edges)
    yield EdgeIndex.from_data(build(store))
    store.close()


@pytest.mark.parametrize(("depth", "kinds", "notes"), [
    (0, ["references"], {"a"}),
    (1, ["references"], {"a", "b"}),
    (1, ["references", "mentions", "related_to"], {"a", "b", "e"}),
    (2, ["references"], {"a", "b"}),
    (2, ["references", "depends_on"], {"a", "b", "c"}),
    (3, ["references", "depends_on"], {"a", "b", "c", "d"}),
    (3, ["next", "prev", "belongs_to"], {"a"}),                   # structural kinds are never followed
])
def test_expand_follows_depth_and_edge_types(index: EdgeIndex, depth: int, kinds: list[str],
                                             notes: set[str]) -> None:
    assert expand(index, ["a#c01"], depth, kinds).notes == notes


def test_expand_keeps_the_strongest_edge_between_two_notes(index: EdgeIndex) -> None:
    sub = expand(index, ["a#c01"], 1, ["mentions", "related_to"])
    assert sub.graph["a"]["e"]["confidence"] == 0.7
    assert sub.edge_bonus("e") == pytest.approx(0.7)
    assert sorted(e["kind"] for e in sub.incoming("e")) == ["mentions", "related_to"]


def test_expand_seeds_are_notes_weighted_by_their_best_chunk(index: EdgeIndex) -> None:
    sub = expand(index, ["a#c01", "a#c02", "b#c01"], 1, ["references"],
                 {"a#c01": 0.2, "a#c02": 0.9, "b#c01": 0.5})
    assert sub.seeds == {"a": 0.9, "b": 0.5}
