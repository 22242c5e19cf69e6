"""Note-level results by default: top_k distinct notes, each hit its best chunk with the note's other matching
chunks as passages in reading order; `group: "chunk"` keeps the chunk list; what plain `retrieve()` returns."""

from __future__ import annotations

import pytest
from llama_index.core.schema import MetadataMode
from retrieval_fixtures import NoteSpec, at_cos, make_retriever, note_order, order

from mindnet.retrieval.query import QueryRequest

# note "long": chunk 3 matches best, then chunk 1, then chunk 2; "short" lies between them. In semantic mode
# S_sem is the cosine scaled over the candidates (0.5 .. 0.9): 0.9 -> 1.0, 0.85 -> 0.875, 0.8 -> 0.75, 0.6 -> 0.25
NOTES = [NoteSpec("long", [at_cos(0.8), at_cos(0.6), at_cos(0.9)]), NoteSpec("short", [at_cos(0.85)]),
         NoteSpec("other", [at_cos(0.5)])]


def test_search_returns_distinct_notes_with_passages_in_reading_order() -> None:
    nodes = make_retriever(NOTES).search(QueryRequest(query="q", mode="semantic", top_k=2)).nodes
    assert order(nodes) == ["long#c03", "short#c01"]
    passages = nodes[0].node.metadata["passages"]
    assert [(p["node_id"], p["ord"], round(p["score"], 3)) for p in passages] == [
        ("long#c01", 1, 0.75), ("long#c02", 2, 0.25)]
    assert nodes[1].node.metadata["passages"] == []


def test_top_k_counts_notes_not_chunks() -> None:
    nodes = make_retriever(NOTES).search(QueryRequest(query="q", mode="hybrid", top_k=3)).nodes
    assert note_order(nodes) == ["long", "short", "other"]


def test_group_chunk_keeps_the_chunk_list() -> None:
    nodes = make_retriever(NOTES).search(QueryRequest(query="q", mode="semantic", top_k=4, group="chunk")).nodes
    assert order(nodes) == ["long#c03", "short#c01", "long#c01", "long#c02"]
    assert all("passages" not in n.node.metadata for n in nodes)


def test_plain_retrieve_returns_one_node_per_note_whose_text_is_the_best_chunk() -> None:
    nodes = make_retriever(NOTES, defaults={"mode": "semantic", "top_k": 2}).retrieve("q")
    assert order(nodes) == ["long#c03", "short#c01"]
    llm_text = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "long chunk 3" in llm_text and "passages" not in llm_text


def test_plain_retrieve_with_group_chunk_default_returns_chunks() -> None:
    retriever = make_retriever(NOTES, defaults={"mode": "semantic", "top_k": 3, "group": "chunk"})
    assert order(retriever.retrieve("q")) == ["long#c03", "short#c01", "long#c01"]


@pytest.mark.parametrize("group", ["note", "chunk"])
def test_aggregation_still_sees_every_chunk(group: str) -> None:
    result = make_retriever(NOTES).search(QueryRequest(query="q", mode="semantic", aggregate="sum", group=group))
    assert [(h.note_id, round(h.score, 3)) for h in result.notes] == [("long", 2.0), ("short", 0.875),
                                                                      ("other", 0.0)]
