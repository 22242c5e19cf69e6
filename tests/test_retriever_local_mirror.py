"""The in-memory lexical mirror (local Qdrant) must rank exactly as the path that asks Qdrant itself (the path
a Qdrant server takes): same hits, same order, same scores, for hybrid search with graph and filters."""

from __future__ import annotations

import pytest
from helpers_vault import copy_sample_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever

QUERIES = [
    {"query": "Warum habe ich Qdrant gewählt?"},
    {"query": "What does the Karate training plan depend on?", "expand": {"depth": 2}},
    {"query": "hybride Suche BM25", "keywords": ["BM25", "Fusion"], "variants": ["hybrid search"]},
    {"query": "Training", "filters": {"types": ["experience", "project"]}},
    {"query": "Ollama", "filters": {"tags": ["tools"]}},
]
# (a path prefix is exact in the mirror but filtered after a widened search on a server, so it is not compared)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from fake_ollama import FakeOllama
    from helpers_vault import fake_settings

    from mindnet.service import Mindnet
    tmp = tmp_path_factory.mktemp("mirror")
    copy_sample_vault(tmp / "vault")
    with FakeOllama() as server:
        app = Mindnet(fake_settings(tmp, server.url))
        app.ingest()
        yield app
        app.close()


@pytest.mark.parametrize("fields", QUERIES)
def test_mirror_and_qdrant_paths_agree(app, fields) -> None:
    mirror = MindnetRetriever.from_settings(app.settings, client=app.client, embed_model=app.embed_model)
    direct = MindnetRetriever.from_settings(app.settings, client=app.client, embed_model=app.embed_model)
    direct.cache_edges = False          # no mirror, no edge index: every step is a Qdrant query
    request = QueryRequest(mode="hybrid", top_k=10, **fields)
    a, b = mirror.search(request), direct.search(request)
    assert a.nodes, fields
    assert [n.node.metadata["chunk_id"] for n in a.nodes] == [n.node.metadata["chunk_id"] for n in b.nodes]
    assert [n.score for n in a.nodes] == pytest.approx([n.score for n in b.nodes], rel=1e-4)
    assert "graph" in a.trace
