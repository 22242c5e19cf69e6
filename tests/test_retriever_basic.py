"""MindnetRetriever: semantic vs hybrid search, graph expansion, filters, sync/async."""

from __future__ import annotations

import asyncio

import pytest
from retrieval_fixtures import NoteSpec, at_cos, link, make_retriever, note_order

from mindnet.retrieval import retriever as retriever_module
from mindnet.retrieval import search as search_module
from mindnet.retrieval.query import QueryRequest

SIMPLE = [NoteSpec("a", [at_cos(0.9)]), NoteSpec("b", [at_cos(0.7)]), NoteSpec("c", [at_cos(0.5)])]


def test_semantic_mode_ranks_by_cosine_min_max_scaled_over_the_candidates() -> None:
    # cosines 0.9, 0.7, 0.5: S_sem = (cos - 0.5) / (0.9 - 0.5) = 1.0, 0.5, 0.0; the raw cosine stays as `dense`
    result = make_retriever(SIMPLE).search(QueryRequest(query="q", mode="semantic"))
    assert note_order(result.nodes) == ["a", "b", "c"]
    assert [n.score for n in result.nodes] == pytest.approx([1.0, 0.5, 0.0])
    assert [n.node.metadata["score_breakdown"]["dense"] for n in result.nodes] == pytest.approx([0.9, 0.7, 0.5])


def test_semantic_mode_never_calls_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_graph(*args: object, **kwargs: object) -> None:
        raise AssertionError("expand() called in semantic mode")

    monkeypatch.setattr(search_module, "expand", no_graph)
    result = make_retriever(SIMPLE, [link("a", "c")]).search(
        QueryRequest(query="q", mode="semantic", expand={"depth": 3}))
    assert "graph" not in result.trace
    assert result.nodes[0].node.metadata["explanation"]["reasons"][-1] == \
        "graph not consulted (semantic mode or depth 0)"


def test_semantic_mode_has_no_lexical_score() -> None:
    result = make_retriever(SIMPLE).search(QueryRequest(query="q", mode="semantic"))
    assert [n.node.metadata["score_breakdown"]["lexical"] for n in result.nodes] == [None, None, None]


def test_top_k_cuts_the_list() -> None:
    result = make_retriever(SIMPLE).search(QueryRequest(query="q", mode="semantic", top_k=2))
    assert note_order(result.nodes) == ["a", "b"]


# a note only the BM25 search likes: its dense cosine is 0, its text holds the query word
LEXICAL = [NoteSpec("a", [at_cos(0.9)]), NoteSpec("b", [at_cos(0.8)]),
           NoteSpec("lex", [at_cos(0.0)], texts=["A trip to Zanzibar"]), NoteSpec("far", [at_cos(-0.9)])]


@pytest.mark.parametrize(("mode", "top2", "order"), [
    ("semantic", ["a", "b"], ["a", "b", "lex", "far"]),
    # hybrid: 0.5 * (dense - min) / (max - min) + 0.5 * BM25 / max BM25 -> lex 0.75, a 0.5, b 0.472, far 0
    ("hybrid", ["lex", "a"], ["lex", "a", "b", "far"]),
])
def test_hybrid_fuses_dense_and_lexical(mode: str, top2: list[str], order: list[str]) -> None:
    r = make_retriever(LEXICAL, queries={"zanzibar": at_cos(1.0)})
    request = {"query": "zanzibar", "mode": mode, "expand": {"depth": 0}}
    assert note_order(r.search(QueryRequest(**request, top_k=2)).nodes) == top2
    assert note_order(r.search(QueryRequest(**request)).nodes) == order


def test_hybrid_semantic_score_worked_numbers() -> None:
    r = make_retriever(LEXICAL, queries={"zanzibar": at_cos(1.0)})
    nodes = r.search(QueryRequest(query="zanzibar", mode="hybrid", expand={"depth": 0})).nodes
    got = {n.node.metadata["note_id"]: n.node.metadata["score_breakdown"] for n in nodes}
    assert {k: (b["lexical"], b["semantic"]) for k, b in got.items()} == {
        "lex": (1.0, pytest.approx(0.75)), "a": (0.0, pytest.approx(0.5)),
        "b": (0.0, pytest.approx(0.5 * 1.7 / 1.8)), "far": (0.0, pytest.approx(0.0, abs=1e-7))}


# 61 chunks rank above `hidden` (the dense search takes 50 in hybrid), so only the graph can find it
GRAPH = [NoteSpec("top", [at_cos(0.9)]), NoteSpec("filler", [at_cos(0.5)] * 61),
         NoteSpec("hidden", [at_cos(0.2)]), NoteSpec("deeper", [at_cos(0.1)]), NoteSpec("dep", [at_cos(0.3)])]
GRAPH_EDGES = [link("top", "hidden"), link("hidden", "deeper"), link("top", "dep", kind="depends_on")]


@pytest.fixture(scope="module")
def graph_retriever() -> retriever_module.MindnetRetriever:
    return make_retriever(GRAPH, GRAPH_EDGES)


Retriever = retriever_module.MindnetRetriever


def test_without_the_graph_the_linked_note_is_missed(graph_retriever: Retriever) -> None:
    nodes = graph_retriever.search(QueryRequest(query="q", top_k=10, expand={"depth": 0})).nodes
    assert {"hidden", "deeper", "dep"} & set(note_order(nodes)) == set()


@pytest.mark.parametrize(("depth", "kinds", "found"), [
    (1, ["references"], {"hidden"}),
    (2, ["references"], {"hidden", "deeper"}),
    (1, ["depends_on"], {"dep"}),
    (1, ["references", "depends_on"], {"hidden", "dep"}),
    (1, ["mentions"], set()),
])
def test_graph_expansion_follows_depth_and_edge_types(graph_retriever: Retriever, depth: int,
                                                      kinds: list[str], found: set[str]) -> None:
    expand = {"depth": depth, "edge_types": kinds}
    result = graph_retriever.search(QueryRequest(query="q", top_k=10, expand=expand))
    via_graph = {n.node.metadata["note_id"] for n in result.nodes
                 if n.node.metadata["explanation"]["via_graph"]}
    assert via_graph == found
    assert result.trace["graph"]["graph_only_candidates"] == len(found)


def test_graph_candidate_carries_its_own_similarity(graph_retriever: Retriever) -> None:
    nodes = graph_retriever.search(QueryRequest(query="q", top_k=10)).nodes
    hidden = next(n for n in nodes if n.node.metadata["note_id"] == "hidden").node.metadata
    assert hidden["mindnet_semantic"]["via_graph"] is True
    assert hidden["score_breakdown"]["dense"] == pytest.approx(0.2)
    assert hidden["explanation"]["reasons"][1] == "found through graph expansion from the vector hits"
    assert hidden["explanation"]["incoming"][0]["other_id"] == "top"


FILTERED = [
    NoteSpec("p1", [at_cos(0.9)], type="project", tags=["work"], path="projects/p1.md"),
    NoteSpec("p2", [at_cos(0.8)], type="project", tags=["home"], path="projects-old/p2.md"),
    NoteSpec("c1", [at_cos(0.7)], type="concept", tags=["work", "ml"], path="concepts/c1.md"),
    NoteSpec("c2", [at_cos(0.6)], type="concept", tags=[], path="c2.md"),
]


@pytest.mark.parametrize(("filters", "notes"), [
    ({}, ["p1", "p2", "c1", "c2"]),
    ({"types": ["project"]}, ["p1", "p2"]),
    ({"types": ["concept", "decision"]}, ["c1", "c2"]),
    ({"tags": ["work"]}, ["p1", "c1"]),
    ({"tags": ["ml", "home"]}, ["p2", "c1"]),
    ({"note_ids": ["c2", "p2"]}, ["p2", "c2"]),
    ({"path_prefix": "projects"}, ["p1"]),          # a folder: projects-old/ is not below projects/
    ({"path_prefix": "/projects/"}, ["p1"]),
    ({"types": ["project"], "tags": ["work"]}, ["p1"]),
    ({"types": ["concept"], "path_prefix": "projects"}, []),
])
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_filters(filters: dict, notes: list[str], mode: str) -> None:
    result = make_retriever(FILTERED).search(QueryRequest(query="q", mode=mode, filters=filters))
    assert note_order(result.nodes) == notes


def test_filters_apply_to_graph_candidates(graph_retriever: Retriever) -> None:
    nodes = graph_retriever.search(QueryRequest(query="q", top_k=10, filters={"note_ids": ["top", "dep"]},
                                                expand={"edge_types": ["references", "depends_on"]})).nodes
    assert note_order(nodes) == ["top", "dep"]


def test_aretrieve_returns_the_same_nodes_as_retrieve() -> None:
    r = make_retriever(SIMPLE, [link("a", "c")])
    sync = r.retrieve("q")
    async_ = asyncio.run(r.aretrieve("q"))
    assert [(n.node.node_id, n.score) for n in async_] == [(n.node.node_id, n.score) for n in sync]
    breakdowns = [n.node.metadata["score_breakdown"] for n in sync]
    assert [n.node.metadata["score_breakdown"] for n in async_] == breakdowns


def test_retrieve_uses_the_retriever_defaults() -> None:
    r = make_retriever(SIMPLE, defaults={"mode": "semantic", "top_k": 1})
    assert note_order(r.retrieve("q")) == ["a"]


def test_configured_aggregation_returns_note_level_results() -> None:
    from retrieval_fixtures import config
    notes = [NoteSpec("a", [at_cos(0.9), at_cos(0.8)]), NoteSpec("b", [at_cos(0.85)])]
    retriever = make_retriever(notes, cfg=config(**{"aggregation": {"enabled": True, "method": "sum"}}))
    result = retriever.search(QueryRequest(query="q", mode="semantic"))
    # cosines 0.9, 0.8 (a) and 0.85 (b) scale to 1.0, 0.0 and 0.5; a's sum is 1.0
    assert [(h.note_id, round(h.score, 3)) for h in result.notes] == [("a", 1.0), ("b", 0.5)]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_path_prefix_finds_a_folder_note_below_many_better_matches(mode: str) -> None:
    # 60 closer notes elsewhere fill the whole candidate pool; the folder's only note must still be found
    others = [NoteSpec(f"o{i:02d}", [at_cos(0.9)], path=f"other/o{i:02d}.md") for i in range(60)]
    target = NoteSpec("p1", [at_cos(0.2)], path="projects/p1.md")
    result = make_retriever([*others, target]).search(
        QueryRequest(query="q", mode=mode, top_k=5, filters={"path_prefix": "projects"}))
    assert note_order(result.nodes) == ["p1"]
