"""HTTP: POST /ingest/analyze and POST /analyze - a draft, a note, and bad input (422, 404, 413)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_vault import write_vault

from mindnet.api import create_app

VAULT = {
    "concepts/qdrant.md": "---\nid: qdrant\n---\n# Qdrant\n\nQdrant speichert Vektoren und Payload.\n",
    "concepts/bm25.md": "---\nid: bm25\n---\n# BM25\n\nBM25 gewichtet Terme im Korpus. Siehe [[Qdrant]].\n",
    "concepts/terme.md": "---\nid: terme\n---\n# Terme\n\nTerme im Korpus gewichtet.\n",
}


@pytest.fixture
def api(make_app, tmp_path: Path) -> TestClient:
    write_vault(tmp_path / "vault", VAULT)
    mindnet = make_app()
    mindnet.ingest()
    return TestClient(create_app(mindnet))


@pytest.mark.parametrize("route", ["/ingest/analyze", "/analyze"])
def test_a_draft_gets_typed_link_suggestions(api: TestClient, route: str) -> None:
    text = "Die Suche hängt ab von Qdrant."
    r = api.post(route, json={"text": text, "llm": False})
    assert r.status_code == 200
    body = r.json()
    assert body["source"]["kind"] == "draft" and body["source"]["note_id"] is None
    first = body["links"][0]
    assert (first["note_id"], first["relation"]["kind"], first["sources"]) == ("qdrant", "depends_on",
                                                                                ["mention", "related"])
    span = first["mentions"][0]
    assert text[span["start"]:span["end"]] == "Qdrant"
    assert first["callout"] == "> [!edge] depends_on: [[qdrant]]"     # by file name, as Obsidian links
    assert set(body) == {"source", "links", "mentions", "related", "type", "tags", "duplicate", "llm", "warnings",
                         "timing_ms"}


def test_a_note_by_path_excludes_itself_and_its_links(api: TestClient) -> None:
    body = api.post("/analyze", json={"note": "concepts/bm25.md", "llm": False}).json()
    assert body["source"]["note_id"] == "bm25" and body["source"]["linked"] == ["qdrant"]
    assert [s["note_id"] for s in body["links"]] == ["terme"]


@pytest.mark.parametrize(("payload", "field"), [
    ({"text": ""}, "text"),
    ({"text": "   "}, "text"),
    ({}, "text"),
    ({"text": "a", "note": "qdrant"}, "note"),
    ({"text": "a", "llm": "yes"}, "llm"),
    ({"text": "a", "llm": 1}, "llm"),
    ({"text": "a", "limit": "5"}, "limit"),
    ({"text": "a", "limit": 500}, "limit"),
    ({"text": "a", "extra": 1}, "extra"),
    ({"text": 5}, "text"),
])
def test_bad_input_is_422_naming_the_field(api: TestClient, payload: dict, field: str) -> None:
    r = api.post("/ingest/analyze", json=payload)
    assert r.status_code == 422
    body = r.json()
    assert body.get("field") == field or field in [e["field"] for e in body.get("errors", [])]


def test_an_unknown_note_is_404(api: TestClient) -> None:
    r = api.post("/ingest/analyze", json={"note": "nowhere"})
    assert r.status_code == 404
    assert "no note with id or path 'nowhere'" in r.json()["detail"]


def test_a_1mb_draft_is_refused_naming_the_limit(api: TestClient) -> None:
    r = api.post("/ingest/analyze", json={"text": "Wort " * 209_716})
    assert r.status_code == 413
    assert r.json()["field"] == "text"
    assert "over the analyze limit of 200,000 bytes" in r.json()["detail"]
    assert "max_text_bytes" in r.json()["detail"]


def test_malformed_json_is_422(api: TestClient) -> None:
    r = api.post("/analyze", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
