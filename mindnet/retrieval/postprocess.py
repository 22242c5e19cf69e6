"""Head/tail reranking that never drops a candidate, and per-note aggregation of chunk scores."""

from __future__ import annotations

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from mindnet.retrieval.hits import AGGREGATORS, NoteHit, aggregate

__all__ = ["AGGREGATORS", "NoteHit", "aggregate_by_note", "rerank_head_tail"]


def rerank_head_tail(nodes: list[NodeWithScore], reranker: BaseNodePostprocessor, *, limit: int,
                     query: QueryBundle | str) -> list[NodeWithScore]:
    """Rerank the first `limit` nodes with any LlamaIndex postprocessor; keep the tail, in its order, below the
    reranked head (its scores are shifted under the head's lowest, its original score kept in metadata)."""
    head, tail = nodes[:limit], nodes[limit:]
    bundle = query if isinstance(query, QueryBundle) else QueryBundle(query_str=query)
    reranked = reranker.postprocess_nodes(list(head), query_bundle=bundle)
    seen = {n.node.node_id for n in reranked}
    reranked += [n for n in head if n.node.node_id not in seen]   # a reranker with its own top_n drops none here
    floor = min((n.score or 0.0) for n in reranked) if reranked else 0.0
    out = list(reranked)
    for i, n in enumerate(tail):
        node = n.node.model_copy()
        node.metadata = {**node.metadata, "score_before_rerank": n.score}
        out.append(NodeWithScore(node=node, score=floor - 1e-6 * (i + 1)))
    return out


def aggregate_by_note(nodes: list[NodeWithScore], method: str = "max") -> list[NoteHit]:
    """Note-level results: each note's score is the sum, max or mean of its chunks' scores."""
    return aggregate(((n.node.node_id, n.node.metadata, n.score) for n in nodes), method)
