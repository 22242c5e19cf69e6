"""Multi-query: variants (dense + sparse), hyde texts (dense only), keywords (the sparse query), merged and
deduplicated by chunk id."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, Q, at_cos, make_retriever, note_order, order, unit

from mindnet.retrieval.query import QueryRequest

NOTES = [NoteSpec("a", [at_cos(0.9)]), NoteSpec("x", [unit(0, 0, 1)]),
         NoteSpec("lex", [unit(0, 0, 0, 1)], texts=["A trip to Zanzibar"])]
QUERIES = {"q": Q, "v": unit(0, 0, 1), "same": Q, "zanzibar story": unit(0, 0, 0, 1)}


def search(mode: str = "hybrid", **fields: object):
    return make_retriever(NOTES, queries=QUERIES).search(
        QueryRequest(query="q", mode=mode, expand={"depth": 0}, **fields))


@pytest.mark.parametrize(("fields", "queries"), [
    ({}, {"dense": ["q"], "sparse": ["q"]}),
    ({"variants": ["v"]}, {"dense": ["q", "v"], "sparse": ["q", "v"]}),
    ({"hyde": ["zanzibar story"]}, {"dense": ["q", "zanzibar story"], "sparse": ["q"]}),
    ({"variants": ["v"], "keywords": ["zanzibar"]}, {"dense": ["q", "v"], "sparse": ["zanzibar"]}),
])
def test_which_texts_go_to_which_search(fields: dict, queries: dict) -> None:
    assert search(**fields).trace["queries"] == queries


@pytest.mark.parametrize(("variants", "first", "x_dense"), [([], "a", 0.0), (["v"], "x", 1.0)])
def test_a_variant_finds_what_the_query_misses(variants: list[str], first: str, x_dense: float) -> None:
    nodes = search("semantic", variants=variants).nodes
    x = next(n for n in nodes if n.node.metadata["note_id"] == "x")
    assert note_order(nodes)[0] == first
    assert x.node.metadata["score_breakdown"]["dense"] == pytest.approx(x_dense, abs=1e-7)


@pytest.mark.parametrize(("fields", "lexical"), [
    ({}, 0.0),
    ({"hyde": ["zanzibar story"]}, 0.0),        # a hypothetical answer is never a sparse query
    ({"keywords": ["zanzibar"]}, 1.0),          # keywords are
    ({"variants": ["zanzibar story"]}, 1.0),    # and so are variants
])
def test_only_query_variants_and_keywords_reach_bm25(fields: dict, lexical: float) -> None:
    nodes = search(**fields).nodes
    lex = next(n for n in nodes if n.node.metadata["note_id"] == "lex")
    assert lex.node.metadata["score_breakdown"]["lexical"] == lexical


@pytest.mark.parametrize(("hyde", "order_", "lex_dense"), [
    ([], ["a", "lex", "x"], 0.0),
    (["zanzibar story"], ["lex", "a", "x"], 1.0),   # a chunk's dense score is its best over all dense queries
])
def test_hyde_adds_dense_similarity(hyde: list[str], order_: list[str], lex_dense: float) -> None:
    nodes = search("semantic", hyde=hyde).nodes
    assert note_order(nodes) == order_
    lex = nodes[order_.index("lex")].node.metadata["score_breakdown"]
    assert lex["dense"] == pytest.approx(lex_dense, abs=1e-7)


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_results_are_deduplicated_by_chunk_id(mode: str) -> None:
    nodes = search(mode, variants=["same", "v"], keywords=["zanzibar"] if mode == "hybrid" else []).nodes
    assert sorted(order(nodes)) == ["a#c01", "lex#c01", "x#c01"]
