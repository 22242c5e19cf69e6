"""HTTP: /chat, /chat/stream, /feedback (and its 422s), /drafts (and 409); the feedback-report command."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_chat import chat_mindnet

from mindnet.api import create_app
from mindnet.cli import main

NOTE = "---\ntype: task\ntitle: Saatgut kaufen\nstatus: offen\n---\n# Saatgut kaufen\n\n## Beschreibung\nTomaten.\n"


@pytest.fixture
def mindnet(tmp_path, fake_ollama):
    m = chat_mindnet(tmp_path, fake_ollama.url)
    yield m
    m.close()


@pytest.fixture
def client(mindnet):
    with TestClient(create_app(mindnet)) as c:
        yield c


def chat(client, fake_ollama, message="Was ist Qdrant?") -> dict:
    fake_ollama.script(["Eine Vektordatenbank."])
    response = client.post("/chat", json={"message": message})
    assert response.status_code == 200
    return response.json()


def test_chat_returns_answer_intent_sources_and_query_id(client, fake_ollama):
    body = chat(client, fake_ollama)
    assert (body["answer"], body["intent"], body["reason"]) == ("Eine Vektordatenbank.", "FACT",
                                                                 "keyword 'was ist' matched")
    assert body["sources"][0]["title"] == "qdrant"          # the note's name: its file name
    assert uuid.UUID(body["query_id"]).version == 4


def test_chat_rejects_blank_message(client):
    response = client.post("/chat", json={"message": "  "})
    assert (response.status_code, response.json()["errors"][0]["field"]) == (422, "message")


def test_chat_rejects_unknown_strategy_naming_the_field(client):
    response = client.post("/chat", json={"message": "Was ist Qdrant?", "strategy": "POETRY"})
    assert (response.status_code, response.json()["field"]) == (422, "strategy")


def test_chat_stream_is_ndjson_of_events_ending_in_done(client, fake_ollama):
    fake_ollama.script(["Eine lokale Vektordatenbank."])
    response = client.post("/chat/stream", json={"message": "Was ist Qdrant?"})
    kinds = [json.loads(line)["kind"] for line in response.text.splitlines()]
    assert (kinds[0], kinds[-1], kinds.count("done"), kinds.count("token")) == ("intent", "done", 1, 3)


def test_feedback_is_recorded(client, fake_ollama):
    query_id = chat(client, fake_ollama)["query_id"]
    response = client.post("/feedback", json={"query_id": query_id, "score": 4, "comment": "gut"})
    assert response.status_code == 200
    assert {k: response.json()[k] for k in ("query_id", "node_id", "score", "comment")} == \
        {"query_id": query_id, "node_id": "generated_answer", "score": 4, "comment": "gut"}


def test_feedback_with_reasons_is_recorded_and_an_unknown_reason_is_422(client, fake_ollama):
    query_id = chat(client, fake_ollama)["query_id"]
    response = client.post("/feedback", json={"query_id": query_id, "score": 1, "reasons": ["missing_note"],
                                              "comment": "fehlt"})
    assert (response.status_code, response.json()["reasons"]) == (200, ["missing_note"])
    response = client.post("/feedback", json={"query_id": query_id, "score": 1, "reasons": ["boring"]})
    assert (response.status_code, response.json()["field"]) == (422, "reasons")


def test_feedback_for_unknown_query_id_is_422_naming_field(client):
    response = client.post("/feedback", json={"query_id": str(uuid.uuid4()), "score": 4})
    assert (response.status_code, response.json()["field"]) == (422, "query_id")


@pytest.mark.parametrize("score", [0, 6])
def test_feedback_score_out_of_range_is_422_naming_field(client, fake_ollama, score):
    query_id = chat(client, fake_ollama)["query_id"]
    response = client.post("/feedback", json={"query_id": query_id, "score": score})
    assert (response.status_code, response.json()["field"]) == (422, "score")


def test_drafts_saves_and_imports(client):
    response = client.post("/drafts", json={"markdown": NOTE, "note_type": "task"})
    assert response.status_code == 200
    assert (response.json()["path"], response.json()["import"]["new"]) == ("tasks/Saatgut kaufen.md", 1)


def test_drafts_existing_note_is_409(client):
    client.post("/drafts", json={"markdown": NOTE, "note_type": "task"})
    response = client.post("/drafts", json={"markdown": NOTE, "note_type": "task"})
    assert response.status_code == 409
    assert "already exists" in response.json()["detail"]


def test_feedback_report_prints_per_strategy_summary(client, fake_ollama, mindnet, monkeypatch, capsys):
    query_id = chat(client, fake_ollama)["query_id"]
    client.post("/feedback", json={"query_id": query_id, "score": 5})
    monkeypatch.setenv("MINDNET_LOG_DIR", str(mindnet.settings.log_dir))
    assert main(["feedback-report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["by_strategy"] == {"FACT": {"count": 1, "mean_score": 5.0}}


def test_a_draft_taking_another_notes_id_is_a_409(client, mindnet):
    taken = next(iter(mindnet.importer.stored_notes()))
    body = {"markdown": f"---\ntitle: Hijack\nid: {taken}\n---\n\n## Kontext\n\ntext", "note_type": "decision"}
    response = client.post("/drafts", json=body)
    assert response.status_code == 409
    assert f"the id '{taken}' is already used by" in response.json()["detail"]


def test_a_draft_over_the_size_limit_is_refused_before_writing(client, mindnet):
    body = {"markdown": "---\ntitle: Huge\n---\n\n" + "x " * 1_500_000, "note_type": "decision"}
    response = client.post("/drafts", json=body)
    assert response.status_code == 422
    assert "over the import's limit" in response.json()["detail"]
    assert not any(p.name.startswith("Huge") for p in Path(mindnet.settings.vault_root).rglob("*.md"))


@pytest.mark.parametrize(("message", "draft_open", "intent", "reason"), [
    ("Ergänze bitte: Budget 200 Euro", True, "INTERVIEW", "a draft is open: follow-ups stay in the interview"),
    ("Was ist Qdrant?", True, "FACT", "a draft is open, but keyword 'was ist' matched: the topic changed to FACT"),
    ("Ergänze bitte: Budget 200 Euro", False, "FACT", "no keyword"),
])
def test_an_open_draft_keeps_follow_ups_in_the_interview(client, fake_ollama, message, draft_open, intent, reason):
    fake_ollama.models = {"nomic-embed-text"}     # no LLM: the router cannot guess, only the rule decides
    body = client.post("/chat", json={"message": message, "draft_open": draft_open}).json()
    assert body["intent"] == intent
    assert body["reason"].startswith(reason)


def test_open_redirects_to_the_note_in_obsidian(client, mindnet):
    response = client.get("/open", params={"path": "concepts/qdrant.md"}, follow_redirects=False)
    assert response.status_code == 307
    vault = Path(mindnet.settings.vault_root).name
    assert response.headers["location"] == f"obsidian://open?vault={vault}&file=concepts%2Fqdrant.md"


@pytest.mark.parametrize("path", ["", "../etc/passwd.md", "concepts/missing.md", "/etc/hostname", "concepts"])
def test_open_refuses_paths_that_are_not_notes_of_the_vault(client, path):
    response = client.get("/open", params={"path": path}, follow_redirects=False)
    assert response.status_code == 404 and "not a note of the vault" in response.json()["detail"]
