"""HTTP: GET /health, POST /query (hits with breakdowns, 422 naming the field), search history logging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_vault import fake_settings
from retrieval_fixtures import DictEmbedding, NoteSpec, Q, at_cos, build_index, link

from mindnet.api import create_app
from mindnet.service import Mindnet
from mindnet.store.factory import TemporaryEdgeStore

NOTES = [NoteSpec("a", [at_cos(0.9)], type="decision"), NoteSpec("b", [at_cos(0.7), at_cos(0.6)]),
         NoteSpec("c", [at_cos(0.5)])]


@pytest.fixture
def api(tmp_path: Path) -> TestClient:
    store = TemporaryEdgeStore("t")
    build_index(store, NOTES, [link("a", "c")])
    settings = fake_settings(tmp_path, "http://127.0.0.1:9", log_dir=tmp_path / "logs")
    mindnet = Mindnet(settings, store=store, embed_model=DictEmbedding(vectors={"q": Q}))
    return TestClient(create_app(mindnet))


def history(tmp_path: Path) -> list[dict]:
    path = tmp_path / "logs" / "search_history.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_health_counts_the_collections(api: TestClient, tmp_path: Path) -> None:
    r = api.get("/health")
    assert r.status_code == 200
    body = r.json()
    progress = body.pop("import")    # no import ran in this process
    assert body == {"status": "ok", "problems": [], "importing": False, "opening": False, "searchable": True,
                    "searching_from": "index", "engine": "qdrant-edge", "counts_from": "index",
                    "collections": {"notes": 3, "chunks": 4, "edges": 1},
                    "embedding": "ollama", "vault": "vault"}   # the folder's name, never a server path
    assert (progress["phase"], progress["running"], progress["eta_seconds"]) == ("idle", False, None)


def test_query_returns_hits_with_breakdowns(api: TestClient) -> None:
    r = api.post("/query", json={"query": "q", "mode": "semantic", "top_k": 3})
    assert r.status_code == 200
    body = r.json()
    assert (body["mode"], body["top_k"], body["group"]) == ("semantic", 3, "note")
    assert [h["node_id"] for h in body["hits"]] == ["a#c01", "b#c01", "c#c01"]
    # cosines 0.9 .. 0.5 scale to 1.0 .. 0.0 over the candidates
    assert body["hits"][0]["score_breakdown"]["total"] == pytest.approx(1.0)
    assert body["hits"][0]["explanation"]["reasons"][0] == \
        "semantic match 1.000 (cosine 0.900, scaled between the candidates' lowest and highest) x type " \
        "'decision' weight 1 -> 1.000"


def test_query_groups_by_note_with_the_other_chunks_as_passages(api: TestClient) -> None:
    body = api.post("/query", json={"query": "q", "mode": "semantic", "top_k": 2}).json()
    assert [(h["note_id"], h["node_id"]) for h in body["hits"]] == [("a", "a#c01"), ("b", "b#c01")]
    assert body["hits"][0]["passages"] == []
    assert [(p["node_id"], p["ord"], round(p["score"], 4), p["text"]) for p in body["hits"][1]["passages"]] == [
        ("b#c02", 2, 0.25, "b chunk 2")]      # cosine 0.6 between 0.5 and 0.9


def test_query_group_chunk_keeps_the_chunk_list(api: TestClient) -> None:
    body = api.post("/query", json={"query": "q", "mode": "semantic", "top_k": 3, "group": "chunk"}).json()
    assert body["group"] == "chunk"
    assert [h["node_id"] for h in body["hits"]] == ["a#c01", "b#c01", "b#c02"]
    assert all("passages" not in h for h in body["hits"])


def test_query_without_explanations(api: TestClient) -> None:
    body = api.post("/query", json={"query": "q", "explain": False}).json()
    assert all("explanation" not in h for h in body["hits"])


def test_query_returns_notes_when_aggregated(api: TestClient) -> None:
    body = api.post("/query", json={"query": "q", "mode": "semantic", "aggregate": "sum"}).json()
    assert [(n["note_id"], round(n["score"], 4)) for n in body["notes"]] == [
        ("a", 1.0), ("b", 0.75), ("c", 0.0)]   # b: 0.5 + 0.25 (cosines 0.7, 0.6 between 0.5 and 0.9)


@pytest.mark.parametrize(("payload", "field"), [
    ({"query": ""}, "query"),
    ({"query": "q", "top_k": -1}, "top_k"),
    ({"query": "q", "top_k": 51}, "top_k"),
    ({"query": "q", "expand": {"depth": 4}}, "expand.depth"),
    ({"query": "q", "expand": {"edge_types": ["likes"]}}, "expand.edge_types"),
    ({"query": "q", "mode": "fuzzy"}, "mode"),
    ({"query": "q", "extra": 1}, "extra"),
    ({}, "query"),
])
def test_bad_query_is_422_naming_the_field(api: TestClient, tmp_path: Path, payload: dict,
                                           field: str) -> None:
    r = api.post("/query", json=payload)
    assert r.status_code == 422
    body = r.json()
    assert body.get("field") == field or [e["field"] for e in body.get("errors", [])] == [field]
    assert field in body["detail"]
    assert not (tmp_path / "logs" / "search_history.jsonl").exists()


def test_every_query_is_logged_with_its_hits(api: TestClient, tmp_path: Path) -> None:
    first = api.post("/query", json={"query": "q", "mode": "semantic", "top_k": 2}).json()
    second = api.post("/query", json={"query": "q", "mode": "hybrid", "top_k": 1}).json()
    records = history(tmp_path)
    assert [(r["query_id"], r["query_text"], r["mode"], r["source"]) for r in records] == [
        (first["query_id"], "q", "semantic", "query"), (second["query_id"], "q", "hybrid", "query")]
    assert [h["node_id"] for h in records[0]["hits"]] == ["a#c01", "b#c01"]
    assert records[0]["hits"][0]["breakdown"] == first["hits"][0]["score_breakdown"]
    assert records[0]["hits"][0]["score"] == first["hits"][0]["score"]


def test_malformed_json_names_the_body_not_a_byte_offset(api: TestClient) -> None:
    response = api.post("/query", content=b'{"query": "x",,}', headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body"


def test_a_boolean_is_not_a_top_k(api: TestClient) -> None:
    response = api.post("/query", json={"query": "x", "top_k": True})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "top_k"
