"""QueryRequest: defaults from retriever.yaml, bounds, and errors that name the field."""

from __future__ import annotations

import pytest
from retrieval_fixtures import config

from mindnet.errors import QueryError
from mindnet.retrieval.query import BUILTIN_EDGE_KINDS, QueryRequest

KINDS = set(BUILTIN_EDGE_KINDS)


@pytest.mark.parametrize(("fields", "field"), [
    ({"query": ""}, "query"),
    ({"query": "   "}, "query"),
    ({"query": "q", "top_k": -1}, "top_k"),
    ({"query": "q", "top_k": 0}, "top_k"),
    ({"query": "q", "top_k": 51}, "top_k"),
    ({"query": "q", "expand": {"depth": 4}}, "expand.depth"),
    ({"query": "q", "expand": {"depth": -1}}, "expand.depth"),
    ({"query": "q", "expand": {"edge_types": ["references", "likes"]}}, "expand.edge_types"),
    ({"query": "q", "mode": "fuzzy"}, "mode"),
    ({"query": "q", "colour": "red"}, "colour"),
])
def test_bad_request_raises_query_error_naming_the_field(fields: dict, field: str) -> None:
    with pytest.raises(QueryError) as info:
        QueryRequest.build(**fields).resolved(config(), KINDS)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_top_k_over_cap_names_the_cap() -> None:
    with pytest.raises(QueryError, match=r"top_k: is 51, above the cap of 50"):
        QueryRequest(query="q", top_k=51).resolved(config(), KINDS)


def test_unknown_edge_type_lists_it() -> None:
    with pytest.raises(QueryError, match=r"unknown edge type\(s\) \['likes'\]"):
        QueryRequest(query="q", expand={"edge_types": ["likes"]}).resolved(config(), KINDS)


def test_defaults_come_from_config() -> None:
    q = QueryRequest(query="q").resolved(config(**{"top_k": 7, "expand.depth": 2}), KINDS)
    assert (q.mode, q.top_k, q.depth, q.edge_types, q.rerank) == (
        "hybrid", 7, 2, ["references", "depends_on", "related_to", "mentions"], False)


def test_edge_types_alone_keep_the_configured_depth() -> None:
    request = QueryRequest(query="q", expand={"edge_types": ["mentions"]})
    q = request.resolved(config(**{"expand.depth": 2}), KINDS)
    assert (q.depth, q.edge_types) == (2, ["mentions"])


def test_semantic_mode_never_expands() -> None:
    q = QueryRequest(query="q", mode="semantic", expand={"depth": 3}).resolved(config(), KINDS)
    assert q.depth == 0


def test_query_is_stripped() -> None:
    assert QueryRequest(query="  qdrant  ").query == "qdrant"


@pytest.mark.parametrize(("fields", "texts"), [
    ({"query": "a"}, ["a"]),
    ({"query": "a", "search_text": "b"}, ["b"]),
    ({"query": "a", "search_text": "  "}, ["a"]),
    ({"query": "a", "variants": ["c", " a ", "", "c"]}, ["a", "c"]),
])
def test_texts_are_search_text_then_variants_without_duplicates(fields: dict, texts: list[str]) -> None:
    assert QueryRequest(**fields).texts() == texts


@pytest.mark.parametrize(("keywords", "sparse"), [([], "the text"), (["qdrant", " bm25 "], "qdrant bm25"),
                                                  (["  "], "the text")])
def test_sparse_text_is_the_keywords_when_given(keywords: list[str], sparse: str) -> None:
    assert QueryRequest(query="q", keywords=keywords).sparse_text("the text") == sparse


@pytest.mark.parametrize(
    ("enabled", "method", "requested", "expected"),
    [(False, "max", None, None), (True, "sum", None, "sum"), (True, "sum", "mean", "mean"),
     (False, "max", "max", "max")],
)
def test_per_note_aggregation_comes_from_the_request_else_the_config(enabled, method, requested, expected) -> None:
    cfg = config(**{"aggregation": {"enabled": enabled, "method": method}})
    assert QueryRequest(query="q", aggregate=requested).resolved(cfg, set(BUILTIN_EDGE_KINDS)).aggregate == expected


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"query": "x" * 2001}, "query"), ({"query": "q", "variants": ["a"] * 11}, "variants"),
     ({"query": "q", "hyde": ["x" * 2001]}, "hyde.0"), ({"query": "q", "search_text": "x" * 2001}, "search_text")],
)
def test_oversized_requests_are_refused_naming_the_field(fields: dict, field: str) -> None:
    with pytest.raises(QueryError) as info:
        QueryRequest.build(**fields)
    assert info.value.field == field
    assert len(str(info.value)) < 200
