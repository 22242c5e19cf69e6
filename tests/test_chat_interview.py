"""INTERVIEW: schema-driven turns to a sanitized draft, saved into the vault and found afterwards."""

from __future__ import annotations

import pytest
from helpers_chat import chat_mindnet

from mindnet.chat.engine import ChatRequest, ChatTurn
from mindnet.chat.sanitizer import empty_draft
from mindnet.errors import DraftError
from mindnet.retrieval.query import QueryRequest

QUESTION = "Welchen Status hat das Projekt, und was ist das Ziel?"
NOTE_REPLY = """Hier ist der Entwurf deiner Notiz:
```markdown
---
type: project
title: Gemüsegarten
status: aktiv
goal: Ab Juni eigenes Gemüse ernten
Situation: Rasen statt Beete
---
# Gemüsegarten

## Ziel
Ab Juni eigenes Gemüse aus dem Gemüsegarten ernten, Tomaten und Zucchini.
```"""


@pytest.fixture
def mindnet(tmp_path, fake_ollama):
    m = chat_mindnet(tmp_path, fake_ollama.url)
    yield m
    m.close()


async def interview(mindnet, fake_ollama):
    fake_ollama.script([QUESTION, NOTE_REPLY])
    first = await mindnet.chat.achat(ChatRequest(message="Neues Projekt: Gemüsegarten"))
    history = [ChatTurn(role="user", content="Neues Projekt: Gemüsegarten"),
               ChatTurn(role="assistant", content=first.answer)]
    second = await mindnet.chat.achat(ChatRequest(message="Aktiv. Ziel: ab Juni eigenes Gemüse ernten.",
                                                  history=history, strategy="INTERVIEW"))
    return first, second


async def test_first_turn_asks_for_missing_fields_without_draft(mindnet, fake_ollama):
    first, _ = await interview(mindnet, fake_ollama)
    assert (first.intent, first.answer, first.draft, first.sources) == ("INTERVIEW", QUESTION, None, [])


async def test_interview_prompt_carries_schema_and_history(mindnet, fake_ollama):
    await interview(mindnet, fake_ollama)
    prompt = fake_ollama.bodies("/api/chat")[1]["messages"][-1]["content"]
    assert "required: title, status, goal" in prompt
    assert f"Assistent: {QUESTION}" in prompt


async def test_last_turn_returns_sanitized_draft(mindnet, fake_ollama):
    _, second = await interview(mindnet, fake_ollama)
    draft = second.draft
    assert (draft["note_type"], draft["title"]) == ("project", "Gemüsegarten")
    assert "Situation:" not in draft["markdown"].split("\n---\n")[0]
    assert "## Situation\n\nRasen statt Beete" in draft["markdown"]
    assert second.trace["target_type"] == "project"


async def test_saved_draft_is_found_by_a_query(mindnet, fake_ollama):
    _, second = await interview(mindnet, fake_ollama)
    saved = await mindnet.asave_draft(second.draft["markdown"], "project")
    assert saved["path"] == "projects/Gemüsegarten.md"
    assert saved["import"]["new"] == 1
    hits = (await mindnet.aquery(QueryRequest(query="Gemüsegarten Tomaten Zucchini")))["hits"]
    assert hits[0]["note_id"] == saved["note_id"]


def test_save_draft_refuses_to_overwrite(mindnet):
    mindnet.save_draft(NOTE_REPLY, "project")
    with pytest.raises(DraftError, match="already exists"):
        mindnet.save_draft(NOTE_REPLY, "project")


def test_save_draft_overwrites_the_version_it_names(mindnet):
    first = mindnet.save_draft(NOTE_REPLY, "project")
    saved = mindnet.save_draft(NOTE_REPLY.replace("Tomaten", "Kartoffeln"), "project", overwrite=True,
                               replaces=first["version"])
    assert "Kartoffeln" in (mindnet.settings.vault_root / saved["path"]).read_text(encoding="utf-8")
    assert "Tomaten" in (mindnet.settings.vault_root / saved["backup"]).read_text(encoding="utf-8")


def test_save_draft_rejects_type_without_schema(mindnet):
    with pytest.raises(DraftError, match="has no interview schema"):
        mindnet.save_draft(NOTE_REPLY, "recipe")


async def test_without_llm_interview_returns_empty_draft(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    response = await mindnet.chat.achat(ChatRequest(message="Neue Entscheidung festhalten"))
    schema = mindnet.settings.decision_engine.schemas["decision"]
    assert response.generation_available is False
    assert response.draft["markdown"] == empty_draft("decision", schema).to_markdown()
    assert response.draft["note_type"] == "decision"


async def test_without_llm_the_empty_draft_takes_its_title_from_the_message(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    response = await mindnet.chat.achat(ChatRequest(message="Neues Projekt: Kräutergarten"))
    assert (response.draft["note_type"], response.draft["title"]) == ("project", "Kräutergarten")
    assert "title: Kräutergarten" in response.draft["markdown"]


@pytest.mark.parametrize(
    ("message", "title"),
    [("Neues Projekt: Kräutergarten", "Kräutergarten"), ("new decision: \"Use Qdrant\"", "Use Qdrant"),
     ("Neues Projekt anlegen", None), ("Neue Notiz:   ", None)],
)
def test_title_from_message(message, title):
    from mindnet.chat.interview import title_from_message
    assert title_from_message(message) == title
