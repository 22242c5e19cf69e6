"""Head/tail reranking keeps every candidate; per-note aggregation (sum, max, mean)."""

from __future__ import annotations

import pytest
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from retrieval_fixtures import NoteSpec, at_cos, config, make_retriever, order

from mindnet.retrieval.postprocess import aggregate_by_note, rerank_head_tail
from mindnet.retrieval.query import QueryRequest


class Reverse(BaseNodePostprocessor):
    """A fake reranker: reverses its input, scored 10, 9, 8 ...; with top_n it keeps only that many."""

    top_n: int | None = None
    calls: list[list[str]] = []

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        self.calls.append([n.node.node_id for n in nodes])
        out = [NodeWithScore(node=n.node, score=10.0 - i) for i, n in enumerate(reversed(nodes))]
        return out[: self.top_n] if self.top_n else out


def nodes(*pairs: tuple[str, float], note: dict[str, str] | None = None) -> list[NodeWithScore]:
    note = note or {}
    return [NodeWithScore(node=TextNode(id_=i, text=i, metadata={"note_id": note.get(i, i), "chunk_id": i}),
                          score=s) for i, s in pairs]


FIVE = nodes(("n1", 0.9), ("n2", 0.8), ("n3", 0.7), ("n4", 0.6), ("n5", 0.5))


def test_rerank_reorders_only_the_head() -> None:
    reranker = Reverse(calls=[])
    out = rerank_head_tail(FIVE, reranker, limit=3, query="q")
    assert [n.node.node_id for n in out] == ["n3", "n2", "n1", "n4", "n5"]
    assert reranker.calls == [["n1", "n2", "n3"]]


def test_rerank_puts_the_tail_below_the_head_in_its_order() -> None:
    out = rerank_head_tail(FIVE, Reverse(calls=[]), limit=3, query="q")
    assert [n.score for n in out] == pytest.approx([10.0, 9.0, 8.0, 8.0 - 1e-6, 8.0 - 2e-6])
    assert [n.node.metadata.get("score_before_rerank") for n in out] == [None, None, None, 0.6, 0.5]


def test_rerank_keeps_what_the_reranker_drops() -> None:
    out = rerank_head_tail(FIVE, Reverse(calls=[], top_n=1), limit=3, query="q")
    assert [n.node.node_id for n in out] == ["n3", "n1", "n2", "n4", "n5"]


@pytest.mark.parametrize("limit", [1, 5, 20])
def test_rerank_keeps_every_candidate(limit: int) -> None:
    out = rerank_head_tail(FIVE, Reverse(calls=[]), limit=limit, query="q")
    assert sorted(n.node.node_id for n in out) == ["n1", "n2", "n3", "n4", "n5"]


def test_retriever_reranks_the_head_when_enabled() -> None:
    notes = [NoteSpec(n, [at_cos(c)]) for n, c in (("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6))]
    cfg = config(**{"rerank.enabled": True, "rerank.limit": 2})
    r = make_retriever(notes, cfg=cfg, reranker=Reverse(calls=[]))
    assert order(r.search(QueryRequest(query="q", mode="semantic")).nodes) == [
        "b#c01", "a#c01", "c#c01", "d#c01"]
    assert order(r.search(QueryRequest(query="q", mode="semantic", rerank=False)).nodes) == [
        "a#c01", "b#c01", "c#c01", "d#c01"]


CHUNKS = nodes(("x1", 0.9), ("y1", 0.8), ("x2", 0.3), ("y2", 0.6), ("z1", 0.5),
               note={"x1": "x", "x2": "x", "y1": "y", "y2": "y", "z1": "z"})


@pytest.mark.parametrize(("method", "expected"), [
    ("max", [("x", 0.9, ["x1", "x2"]), ("y", 0.8, ["y1", "y2"]), ("z", 0.5, ["z1"])]),
    ("sum", [("y", 1.4, ["y1", "y2"]), ("x", 1.2, ["x1", "x2"]), ("z", 0.5, ["z1"])]),
    ("mean", [("y", 0.7, ["y1", "y2"]), ("x", 0.6, ["x1", "x2"]), ("z", 0.5, ["z1"])]),
])
def test_aggregate_by_note(method: str, expected: list[tuple[str, float, list[str]]]) -> None:
    hits = aggregate_by_note(CHUNKS, method)
    assert [(h.note_id, h.chunk_ids) for h in hits] == [(n, c) for n, _, c in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s, _ in expected])


def test_retriever_returns_notes_when_asked() -> None:
    notes = [NoteSpec("x", [at_cos(0.9), at_cos(0.3)]), NoteSpec("y", [at_cos(0.8), at_cos(0.6)])]
    result = make_retriever(notes).search(QueryRequest(query="q", mode="semantic", aggregate="sum"))
    # cosines 0.9, 0.3 (x) and 0.8, 0.6 (y) scale over 0.3 .. 0.9: x 1.0 + 0.0, y 0.833333 + 0.5
    assert [(h.note_id, round(h.score, 6)) for h in result.notes] == [("y", 1.333333), ("x", 1.0)]
    assert make_retriever(notes).search(QueryRequest(query="q", mode="semantic")).notes is None
