"""mindnet's components plug into plain LlamaIndex pipelines."""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever, VectorIndexRetriever
from retrieval_fixtures import (
    PREFIX,
    DictEmbedding,
    NoteSpec,
    Q,
    at_cos,
    build_index,
    make_retriever,
    note_order,
)

from mindnet.retrieval.scorer import MindnetScorer
from mindnet.retrieval.vector_store import chunk_vector_store
from mindnet.settings import ScoringWeights
from mindnet.store.factory import TemporaryEdgeStore

NOTES = [NoteSpec("idea", [at_cos(0.9)], type="concept", weight=0.6),
         NoteSpec("choice", [at_cos(0.8)], type="decision", weight=1.0),
         NoteSpec("far", [at_cos(0.1)])]


def test_query_engine_answers_with_source_nodes() -> None:
    r = make_retriever(NOTES, defaults={"mode": "semantic"})
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM(max_tokens=5))
    response = engine.query("q")
    assert note_order(response.source_nodes) == ["choice", "idea", "far"]
    assert str(response) != ""
    # cosine 0.8 between 0.1 and 0.9 scales to 0.875 (x weight 1); idea: 1.0 x 0.6
    assert response.source_nodes[0].node.metadata["score_breakdown"]["total"] == pytest.approx(0.875)


def test_query_engine_hides_scores_from_the_llm() -> None:
    r = make_retriever(NOTES, defaults={"mode": "semantic"})
    node = r.retrieve("q")[0].node
    assert "score_breakdown" not in node.get_content(metadata_mode="llm")
    assert "explanation" not in node.get_content(metadata_mode="llm")


def test_query_fusion_retriever_wraps_it() -> None:
    r = make_retriever(NOTES, defaults={"mode": "semantic"})
    fusion = QueryFusionRetriever([r], llm=MockLLM(), num_queries=1, use_async=False, similarity_top_k=2)
    assert note_order(fusion.retrieve("q")) == ["choice", "idea"]


def test_scorer_after_a_plain_vector_retriever_reorders_by_weight() -> None:
    store = TemporaryEdgeStore(PREFIX)
    build_index(store, NOTES)
    embed = DictEmbedding(vectors={"q": Q})
    index = VectorStoreIndex.from_vector_store(chunk_vector_store(store), embed_model=embed)
    plain = VectorIndexRetriever(index, similarity_top_k=3, embed_model=embed)
    assert note_order(plain.retrieve("q")) == ["idea", "choice", "far"]

    weights = ScoringWeights(semantic_weight=1.0, edge_weight=0.3, centrality_weight=0.2)
    scorer = MindnetScorer(weights=weights)
    scored = scorer.postprocess_nodes(plain.retrieve("q"), query_str="q")
    assert note_order(scored) == ["choice", "idea", "far"]
    assert [n.score for n in scored] == pytest.approx([0.8, 0.54, 0.1])
    assert scored[1].node.metadata["score_breakdown"]["retriever_weight"] == 0.6


def test_scorer_in_a_query_engine() -> None:
    store = TemporaryEdgeStore(PREFIX)
    build_index(store, NOTES)
    embed = DictEmbedding(vectors={"q": Q})
    index = VectorStoreIndex.from_vector_store(chunk_vector_store(store), embed_model=embed)
    engine = index.as_query_engine(llm=MockLLM(max_tokens=5), similarity_top_k=3,
                                   node_postprocessors=[MindnetScorer()])
    response = engine.query("q")
    assert note_order(response.source_nodes) == ["choice", "idea", "far"]
