"""The dense search over local Qdrant's vector column (mindnet.store.dense_local): the same hits, order and
scores as Qdrant's own query, live points only, and the hybrid retriever's results unchanged by it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fake_ollama import FakeOllama
from helpers_vault import SAMPLE_QUERIES, copy_sample_vault, fake_settings
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.store import dense_local
from mindnet.store.collections import DENSE
from mindnet.store.dense_local import RowMap, dense_top

DIM = 16


def _collection(client: QdrantClient, distance: qm.Distance = qm.Distance.COSINE) -> np.random.Generator:
    rng = np.random.default_rng(7)
    client.create_collection("c", vectors_config={DENSE: qm.VectorParams(size=DIM, distance=distance)})
    points = []
    for i in range(300):
        # every 10th point has no dense vector yet (a chunk written before its embedding)
        vector = {} if i % 10 == 3 else {DENSE: (rng.normal(size=DIM) * rng.uniform(0.1, 9)).tolist()}
        points.append(qm.PointStruct(id=i, vector=vector, payload={"n": i}))
    client.upsert("c", points)
    client.delete("c", points_selector=qm.PointIdsList(points=list(range(0, 300, 7))))
    # an overwrite keeps the point's row; the new vector must be what is searched
    client.upsert("c", [qm.PointStruct(id=5, vector={DENSE: [1.0] * DIM}, payload={"n": 5})])
    return rng


@pytest.mark.parametrize("limit", [1, 10, 50, 1000])
def test_dense_top_equals_qdrants_query(tmp_path: Path, limit: int) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        rng = _collection(client)
        for _ in range(5):
            query = rng.normal(size=DIM) * 3      # not unit length: both normalise it
            ours = dense_top(client, "c", DENSE, query, limit, with_vectors=True)
            theirs = client.query_points("c", query=query.tolist(), using=DENSE, limit=limit,
                                         with_payload=False, with_vectors=[DENSE]).points
            assert ours is not None
            assert [h.id for h in ours] == [str(p.id) for p in theirs]
            assert [h.score for h in ours] == pytest.approx([p.score for p in theirs], abs=1e-6)
            assert np.allclose([h.vector[DENSE] for h in ours], [p.vector[DENSE] for p in theirs], atol=1e-6)
        live = {str(i) for i in range(300) if i % 7 and i % 10 != 3} | {"5"}
        everything = dense_top(client, "c", DENSE, np.ones(DIM), 1000)
        assert {h.id for h in everything} == live      # deleted and unembedded points never come back
        assert everything[0].id == "5"                 # the overwritten vector is the one searched
    finally:
        client.close()


def test_dense_top_defers_to_qdrant_where_it_does_not_apply(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        _collection(client, qm.Distance.DOT)          # vectors are not unit length: only Qdrant knows
        assert dense_top(client, "c", DENSE, np.ones(DIM), 5) is None
        assert dense_top(client, "missing", DENSE, np.ones(DIM), 5) is None
        assert dense_top(object(), "c", DENSE, np.ones(DIM), 5) is None     # not a local client
    finally:
        client.close()


def test_a_filter_as_mirror_rows_gives_qdrants_filtered_hits(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        rng = _collection(client)
        # a mirror in its own order (reversed), holding only live points, as the retriever's snapshot does
        mirror = [str(i) for i in reversed(range(300)) if i % 7]
        keep = np.array([int(pid) % 3 == 0 for pid in mirror])
        rows = RowMap()
        allowed = rows.allowed(client, "c", mirror, keep)
        wanted = qm.Filter(must=[qm.HasIdCondition(has_id=[int(p) for p, k in zip(mirror, keep, strict=True) if k])])
        for _ in range(3):
            query = rng.normal(size=DIM)
            ours = dense_top(client, "c", DENSE, query, 20, allowed=allowed)
            theirs = client.query_points("c", query=query.tolist(), using=DENSE, limit=20, query_filter=wanted,
                                         with_payload=False).points
            assert [h.id for h in ours] == [str(p.id) for p in theirs] and ours
        # a point appended since: the map is rebuilt, and the new point can pass the filter
        client.upsert("c", [qm.PointStruct(id=999, vector={DENSE: (-query).tolist()}, payload={})])
        allowed = rows.allowed(client, "c", [*mirror, "999"], np.append(keep, True))
        assert dense_top(client, "c", DENSE, -query, 1, allowed=allowed)[0].id == "999"
        # a mirror naming a point Qdrant does not hold: Qdrant must filter itself
        assert rows.allowed(client, "c", ["12345"], np.array([True])) is None
    finally:
        client.close()


QUERIES = [
    *SAMPLE_QUERIES,
    {"query": "Reranker", "mode": "hybrid", "variants": ["reranking", "cross encoder"]},
    {"query": "Entscheidung", "mode": "semantic", "filters": {"types": ["decision"], "path_prefix": "decisions"}},
]


def test_retriever_results_are_those_of_qdrants_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_sample_vault(tmp_path / "vault")
    with FakeOllama() as server:
        app = Mindnet(fake_settings(tmp_path, server.url))
        try:
            app.ingest()
            _ = app.client                  # Qdrant itself, not the start file

            def hits() -> list[tuple]:
                out = []
                for r in QUERIES:
                    body = app.query(QueryRequest(**r))
                    out.append([(h["node_id"], round(h["score"], 5), h["explanation"]["reasons"]
                                 if h.get("explanation") else None) for h in body["hits"]])
                return out

            calls = []
            real = dense_local.dense_top
            monkeypatch.setattr("mindnet.retrieval.retriever.dense_top",
                                lambda *a, **k: calls.append(a[1]) or real(*a, **k))
            fast = hits()
            assert len(calls) == len(QUERIES) + 2     # every query text took the direct path, filtered ones too
            monkeypatch.setattr("mindnet.retrieval.retriever.dense_top", lambda *a, **k: None)
            assert hits() == fast
            assert all(fast), [r["query"] for r, h in zip(QUERIES, fast, strict=True) if not h]
        finally:
            app.close()


def test_a_chunk_written_after_the_mirror_loaded_is_found_with_its_payload(tmp_path: Path) -> None:
    """A live import writes a chunk between two refreshes of the in-memory mirror: a dense search finds it in
    Qdrant, and its payload comes from Qdrant (it was a KeyError 'chunk_id', now and then, in the live tests)."""
    copy_sample_vault(tmp_path / "vault")
    with FakeOllama() as server:
        app = Mindnet(fake_settings(tmp_path, server.url))
        try:
            app.ingest()
            request = {"query": "Qdrant als Vektordatenbank", "mode": "hybrid", "expand": {"depth": 1},
                       "group": "chunk", "top_k": 50}
            first = app.query(QueryRequest(**request))["hits"][0]["node_id"]
            collection = app.retriever.collection
            original = next(p for p in app.client.scroll(collection, limit=1000, with_payload=True,
                                                         with_vectors=True)[0]
                            if p.payload["chunk_id"] == first)
            copy = "00000000-0000-4000-8000-000000000001"
            node = json.loads(original.payload["_node_content"])      # LlamaIndex's node, as the importer writes it
            node["id_"] = copy
            payload = {**original.payload, "chunk_id": first + "-copy", "_node_content": json.dumps(node)}
            app.client.upsert(collection, [qm.PointStruct(id=copy,
                                                          vector=original.vector, payload=payload)])
            found = [n.node.node_id for n in app.retriever.search(QueryRequest(**request)).nodes]
            assert str(original.id) in found and copy in found     # retriever nodes carry point ids
        finally:
            app.close()
