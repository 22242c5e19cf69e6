"""The import and retrieval contract, against local Qdrant always and against a Qdrant server when
MINDNET_TEST_QDRANT_URL is set (e.g. `docker run -p 6333:6333 qdrant/qdrant`, then
MINDNET_TEST_QDRANT_URL=http://127.0.0.1:6333). Only the server variant is skipped without that URL.

On local Qdrant the retriever answers from its in-memory mirrors (BM25 postings, edges); on a server it asks
Qdrant itself (sparse search, filtered scrolls over payload indexes). Every query here must give the same hits
and scores on the target as the local mirrors give, and each local test also runs that server code path
against local Qdrant (`direct`), so the path a server takes is exercised on every run.
"""

from __future__ import annotations

import os
import uuid

import pytest
from fake_ollama import FakeOllama
from helpers_vault import copy_sample_vault, fake_settings

from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.service import Mindnet
from mindnet.store.collections import drop_all, missing_payload_indexes, names
from mindnet.store.integrity import check_index

SERVER_URL = os.environ.get("MINDNET_TEST_QDRANT_URL")
QUERIES = [
    {"query": "Warum habe ich Qdrant gewählt?"},
    {"query": "What does the Karate training plan depend on?", "expand": {"depth": 2}},
    {"query": "hybride Suche BM25", "keywords": ["BM25", "Fusion"], "variants": ["hybrid search"]},
    {"query": "Training", "filters": {"types": ["experience", "project"]}},
    {"query": "Ollama", "filters": {"tags": ["tools"]}},
    {"query": "Qdrant", "expand": {"depth": 1, "edge_types": ["related_to"]}},
    {"query": "Embeddings", "mode": "semantic"},
    {"query": "PageRank", "group": "chunk"},
]


@pytest.fixture(scope="module")
def ollama():
    with FakeOllama() as server:
        yield server


@pytest.fixture(scope="module", params=["local", "server"])
def target(request, tmp_path_factory, ollama):
    """The sample vault imported into local Qdrant or into a Qdrant server (own collection prefix, dropped
    afterwards): (app, report)."""
    tmp = tmp_path_factory.mktemp(request.param)
    copy_sample_vault(tmp / "vault")
    if request.param == "server":
        if not SERVER_URL:
            pytest.skip("MINDNET_TEST_QDRANT_URL is not set: no Qdrant server to run the contract against")
        overrides = {"qdrant_url": SERVER_URL, "collection_prefix": f"t{uuid.uuid4().hex[:10]}",
                     "qdrant_shard_number": 2, "qdrant_replication_factor": 1}
    else:
        overrides = {"qdrant_shard_number": 2, "qdrant_replication_factor": 1}   # ignored by local mode
    app = Mindnet(fake_settings(tmp, ollama.url, **overrides))
    try:
        report = app.ingest()
        yield request.param, app, report
    finally:
        if request.param == "server":
            drop_all(app.client, app.settings.collection_prefix)
        app.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, ollama):
    """The same vault in local Qdrant, searched through the in-memory mirrors: what every target must match."""
    tmp = tmp_path_factory.mktemp("reference")
    copy_sample_vault(tmp / "vault")
    app = Mindnet(fake_settings(tmp, ollama.url))
    app.ingest()
    yield app
    app.close()


def _hits(retriever: MindnetRetriever, fields: dict) -> list[tuple[str, float]]:
    request = QueryRequest(**{"mode": "hybrid", "top_k": 10, **fields})
    return [(n.node.metadata["chunk_id"], n.score) for n in retriever.search(request).nodes]


def _retrievers(kind: str, app: Mindnet) -> list[MindnetRetriever]:
    main = MindnetRetriever.from_settings(app.settings, client=app.client, embed_model=app.embed_model)
    if kind == "server":
        assert main.cache_edges is False       # a server is asked directly, never mirrored
        return [main]
    direct = MindnetRetriever.from_settings(app.settings, client=app.client, embed_model=app.embed_model)
    direct.cache_edges = False                 # the server's code path, against local Qdrant
    return [main, direct]


# ------------------------------------------------------------------ import


def test_import_writes_the_same_index_on_every_target(target) -> None:
    kind, app, report = target
    assert (report.notes, report.chunks, report.edges) == (30, 88, 435)
    prefix = app.settings.collection_prefix
    counts = [app.client.count(names(prefix)[k], exact=True).count for k in ("notes", "chunks", "edges")]
    assert counts == [30, 88, 435]
    check = check_index(app.client, prefix)
    assert not check.broken and check.unembedded == 0
    assert missing_payload_indexes(app.client, prefix) == []     # a server has every payload index
    if kind == "server":
        info = app.client.get_collection(names(prefix)["chunks"])
        assert (info.config.params.shard_number, info.config.params.replication_factor) == (2, 1)


def test_unchanged_reimport_writes_nothing(target) -> None:
    _, app, _ = target
    again = app.ingest()
    assert (again.new, again.changed, again.deleted, again.edges_rewritten, again.embedded_texts) == (0, 0, 0, 0, 0)


def test_a_deleted_note_leaves_nothing_behind(target) -> None:
    _, app, _ = target
    vault = app.settings.vault_root
    victim = vault / "concepts" / "pagerank.md"
    text = victim.read_text(encoding="utf-8")
    victim.unlink()
    try:
        report = app.ingest()
        assert report.deleted == 1
        prefix = app.settings.collection_prefix
        left = [p for k in ("notes", "chunks") for p in app.client.scroll(names(prefix)[k], limit=500)[0]
                if p.payload.get("path") == "concepts/pagerank.md"]
        assert left == []
        assert not check_index(app.client, prefix).broken
    finally:
        victim.write_text(text, encoding="utf-8")
        app.ingest()


# ------------------------------------------------------------------ retrieval


@pytest.mark.parametrize("fields", QUERIES, ids=[q["query"][:20] for q in QUERIES])
def test_retrieval_matches_the_local_mirrors(target, reference, fields) -> None:
    kind, app, _ = target
    expected = _hits(MindnetRetriever.from_settings(reference.settings, client=reference.client,
                                                    embed_model=reference.embed_model), fields)
    assert expected, fields
    for retriever in _retrievers(kind, app):
        got = _hits(retriever, fields)
        assert [c for c, _ in got] == [c for c, _ in expected], (kind, retriever.cache_edges, fields)
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-4)


def test_filters_hold_on_every_path(target) -> None:
    kind, app, _ = target
    for retriever in _retrievers(kind, app):
        hits = retriever.search(QueryRequest(query="Training", mode="hybrid", top_k=10,
                                             filters={"types": ["project"]})).nodes
        assert hits and {n.node.metadata["type"] for n in hits} == {"project"}
        hits = retriever.search(QueryRequest(query="Qdrant", mode="hybrid", top_k=10,
                                             filters={"path_prefix": "concepts/"})).nodes
        assert hits and all(n.node.metadata["path"].startswith("concepts/") for n in hits)
        hits = retriever.search(QueryRequest(query="Qdrant", mode="semantic", top_k=10,
                                             filters={"note_ids": ["qdrant"]})).nodes
        assert {n.node.metadata["note_id"] for n in hits} <= {"qdrant"}


def test_a_default_kind_is_followed_through_the_link_that_carries_it(target) -> None:
    """`related_to` is stored on the wikilink's edge (`kinds`), not as an edge of its own: expanding over
    related_to alone still finds it, and explains it as the type default (rule, confidence) it is."""
    kind, app, _ = target
    for retriever in _retrievers(kind, app):
        result = retriever.search(QueryRequest(query="Qdrant", mode="hybrid", top_k=10, explain=True,
                                               expand={"depth": 1, "edge_types": ["related_to"]}))
        explained = [n.node.metadata["explanation"] or {} for n in result.nodes]
        edges = [e for x in explained for e in x.get("incoming", []) + x.get("outgoing", [])]
        defaults = [e for e in edges if e["rule_id"].startswith("edge_defaults:")]
        assert defaults, (kind, retriever.cache_edges)
        assert all(e["kind"] == "related_to" and e["confidence"] == pytest.approx(0.7) for e in defaults)
        assert {e["kind"] for e in edges} == {"related_to"}


# ------------------------------------------------------------------ collection layout (shards, replicas)


def test_shards_and_replicas_reach_the_server_collections(tmp_path, ollama, monkeypatch) -> None:
    """Settings from the environment -> the importer -> create_collection on a server (local mode has no
    shards: it never gets them). A recording client stands in for the server here; the server variant of
    test_import_writes_the_same_index_on_every_target reads the layout back from a real one."""
    import mindnet.store.collections as coll
    from mindnet.settings import Settings
    from mindnet.store.client import open_local

    settings = Settings.from_env({"MINDNET_QDRANT_SHARD_NUMBER": "3", "MINDNET_QDRANT_REPLICATION_FACTOR": "2"})
    assert (settings.qdrant_shard_number, settings.qdrant_replication_factor) == (3, 2)
    created: dict[str, dict] = {}
    client = open_local(":memory:")
    original = client.create_collection

    def record(name, **kwargs):
        created[name] = {k: kwargs.get(k) for k in ("shard_number", "replication_factor")}
        return original(name, **{k: v for k, v in kwargs.items() if k not in created[name]})

    monkeypatch.setattr(client, "create_collection", record)
    copy_sample_vault(tmp_path / "vault")
    base = fake_settings(tmp_path, ollama.url, qdrant_shard_number=settings.qdrant_shard_number,
                         qdrant_replication_factor=settings.qdrant_replication_factor)
    monkeypatch.setattr(coll, "is_local", lambda c: False)      # as a server would be treated
    app = Mindnet(base, client=client)
    with pytest.warns(UserWarning, match="Payload indexes have no effect in the local Qdrant"):
        app.ingest()                          # the "server" got its payload indexes (local mode says so)
    assert created == {f"t_{k}": {"shard_number": 3, "replication_factor": 2} for k in ("chunks", "notes", "edges")}
    monkeypatch.setattr(coll, "is_local", lambda c: True)       # local mode: no layout arguments at all
    created.clear()
    coll.drop_all(client, "t")
    app.ingest(full=True)
    assert created == {f"t_{k}": {"shard_number": None, "replication_factor": None}
                       for k in ("chunks", "notes", "edges")}
    app.close()
    from mindnet.errors import ConfigError
    with pytest.raises(ConfigError, match="MINDNET_QDRANT_SHARD_NUMBER: Input should be greater than or equal to 1"):
        Settings.from_env({"MINDNET_QDRANT_SHARD_NUMBER": "0"})
