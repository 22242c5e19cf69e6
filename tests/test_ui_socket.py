"""The chat UI through Chainlit's socket protocol, without a browser: a real `mindnet serve` (API + chat
at /ui) on a copy of the sample vault with a fake Ollama; the client is the python-socketio client Chainlit
bundles.
Actions (feedback, draft buttons) go through Chainlit's HTTP endpoint /ui/project/action, like the web page.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import socketio
from helpers_ui import ANSWER, ChatServer

Event = tuple[str, Any]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_socket")).start()
    try:
        yield srv
    finally:
        srv.stop()


class ChatClient:
    """One chat session: records every event the server emits, sends messages, calls actions."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session_id = str(uuid.uuid4())
        self.events: list[Event] = []
        self.sio = socketio.AsyncClient(reconnection=False)
        self.sio.on("*", self._record)
        self._changed = asyncio.Event()

    async def _record(self, event: str, data: Any = None) -> None:
        self.events.append((event, data))
        self._changed.set()

    async def connect(self) -> None:
        # the chat lists threads per user, so even without a token the local user logs in (automatically)
        async with httpx.AsyncClient() as http:
            login = await http.post(f"{self.url}/ui/auth/header")
        login.raise_for_status()
        self.cookie = "; ".join(f"{k}={v}" for k, v in login.cookies.items())
        await self.sio.connect(self.url, socketio_path="/ui/ws/socket.io", transports=["websocket"],
                               headers={"Cookie": self.cookie},
                               auth={"clientType": "webapp", "sessionId": self.session_id, "userEnv": "{}"})
        await self.sio.emit("connection_successful")
        await self.wait_for(lambda e: e[0] == "update_message" and e[1]["name"] == "on_chat_start")

    async def wait_for(self, match: Callable[[Event], bool], start: int = 0, timeout: float = 30) -> Event:
        async def scan() -> Event:
            seen = start
            while True:
                for event in self.events[seen:]:
                    if match(event):
                        return event
                seen = len(self.events)
                self._changed.clear()
                await self._changed.wait()
        return await asyncio.wait_for(scan(), timeout)

    async def ask(self, text: str, command: str | None = None) -> list[Event]:
        """Send a message; return the events up to the end of its task."""
        start = len(self.events)
        message = {"id": str(uuid.uuid4()), "threadId": "", "name": "User", "type": "user_message",
                   "output": text, "createdAt": datetime.now(UTC).isoformat(), "command": command}
        await self.sio.emit("client_message", {"message": message, "fileReferences": None})
        await self.wait_for(lambda e: e[0] == "task_start", start=start)
        began = next(i for i in range(start, len(self.events)) if self.events[i][0] == "task_start")
        await self.wait_for(lambda e: e[0] == "task_end", start=began + 1, timeout=60)
        return self.events[start:]

    async def act(self, action: dict[str, Any], **payload: Any) -> dict[str, Any]:
        """Click an action button (optionally with the payload the draft editor sends along)."""
        action = {**action, "payload": {**action["payload"], **payload}}
        body = {"sessionId": self.session_id, "action": action}
        async with httpx.AsyncClient() as http:
            r = await http.post(f"{self.url}/ui/project/action", json=body, timeout=60,
                                headers={"Cookie": self.cookie})
        r.raise_for_status()
        await asyncio.sleep(0.3)   # let the messages the callback sent arrive
        return r.json()["response"]

    async def element_text(self, element: dict[str, Any]) -> str:
        async with httpx.AsyncClient() as http:
            r = await http.get(f"{self.url}/ui/project/file/{element['chainlitKey']}",
                               params={"session_id": self.session_id})
        r.raise_for_status()
        return r.text


@pytest.fixture
async def chat(server: ChatServer) -> AsyncIterator[ChatClient]:
    client = ChatClient(server.url)
    await client.connect()
    try:
        yield client
    finally:
        await client.sio.disconnect()


def messages(events: list[Event]) -> dict[str, dict[str, Any]]:
    """Final state of every step/message by id (new_message, then update_message)."""
    out: dict[str, dict[str, Any]] = {}
    for name, data in events:
        if name in ("new_message", "update_message"):
            out[data["id"]] = {**out.get(data["id"], {}), **data}
    return out


def answer_of(events: list[Event]) -> dict[str, Any]:
    return next(m for m in messages(events).values()
                if m["type"] == "assistant_message" and m["output"].startswith("`"))


def actions_for(events: list[Event], message_id: str) -> list[dict[str, Any]]:
    return [d for n, d in events if n == "action" and d["forId"] == message_id]


async def test_question_streams_answer_with_badge_steps_and_sources(chat: ChatClient) -> None:
    events = await chat.ask("Warum habe ich Qdrant gewählt?")
    steps = {m["id"]: m for m in messages(events).values() if m["type"] in ("tool", "run")}
    how = next(m for m in steps.values() if m["name"] == "How I answered")
    inside = [m["name"] for m in steps.values() if m.get("parentId") == how["id"]]
    assert inside == ["Intent routing", "Retrieval", "Graph expansion", "Scoring", "Sources", "Generation"]
    assert how["output"].startswith("I answered as **DECISION** because")
    answer = answer_of(events)
    assert answer["output"].startswith("`DECISION`")
    assert ANSWER in answer["output"] and "**Sources**" in answer["output"]
    elements = [d for n, d in events if n == "element" and d["forId"] == answer["id"]]
    assert [e["name"] for e in elements if e["display"] == "inline"] == ["AnswerRating"]     # its one rating
    sources = [e for e in elements if e["display"] != "inline"]
    assert sources and all(s["type"] == "custom" and s["display"] == "side" for s in sources)
    assert sorted(s["name"] for s in sources) == sorted(f"[{i}]" for i in range(1, len(sources) + 1))
    # the sources are on screen before the first word of the answer
    first_source = next(i for i, (n, d) in enumerate(events) if n == "element" and d["forId"] == answer["id"])
    first_words = next(i for i, (n, d) in enumerate(events) if n == "update_message" and d["id"] == answer["id"]
                       and "Du hast" in d["output"])
    assert first_source < first_words
    # the side panel shows this answer's sources, under a title naming the question
    panel = next(d for n, d in events if n == "set_sidebar_elements")
    assert sorted(e["id"] for e in panel["elements"]) == sorted(s["id"] for s in sources)
    titles = [d for n, d in events if n == "set_sidebar_title"]
    assert titles == [f"{len(sources)} source{'s' if len(sources) != 1 else ''} for: Warum habe ich Qdrant gewählt?"]


async def test_source_panel_props_hold_breakdown_why_and_raw_text(chat: ChatClient) -> None:
    events = await chat.ask("HTML in notes script alert escape")
    answer = answer_of(events)
    sources = [d for n, d in events if n == "element" and d["forId"] == answer["id"]]
    props = next(s["props"] for s in sources if s["props"]["title"] == "HTML in notes")
    assert props["breakdown"].startswith("semantic ") and props["rows"][-1]["term"] == "total"
    assert props["breakdown"].endswith(f"= {props['rows'][-1]['value']}")
    assert props["why"] and props["open_url"] == "/open?path=HTML%20in%20notes.md"
    # the note's <script> travels as plain data; the element renders it as text (see the browser test)
    assert "<script>alert('x')</script>" in props["text"]


async def test_feedback_on_answer_and_source_lands_in_feedback_jsonl(chat: ChatClient,
                                                                    server: ChatServer) -> None:
    events = await chat.ask("Was ist hybride Suche?")
    answer = answer_of(events)
    assert actions_for(events, answer["id"]) == []          # the rating is the AnswerRating element, not actions
    rating = next(d for n, d in events if n == "element" and d["forId"] == answer["id"]
                  and d["name"] == "AnswerRating")["props"]
    source = next(d for n, d in events if n == "element" and d["forId"] == answer["id"]
                  and d["display"] == "side")["props"]
    query_id = rating["query_id"]
    assert (rating["score"], [o["id"] for o in rating["offered"]]) == (0, ["wrong_source", "missing_note",
                                                                         "wrong_answer"])
    good = {"name": "rate", "payload": {"query_id": query_id, "node_id": "generated_answer", "score": 5}}
    bad = {"name": "rate", "payload": {"query_id": query_id, "node_id": "generated_answer", "score": 1,
                                       "reasons": ["wrong_source"], "comment": "alt"}}   # what its buttons send
    source_down = {"name": "rate", "payload": {"query_id": source["query_id"], "node_id": source["node_id"],
                                               "score": 1}}          # what the panel's button sends
    assert (await chat.act(good))["recorded"] is True
    assert (await chat.act(bad))["reasons"] == ["wrong_source"]
    assert (await chat.act(source_down))["recorded"] is True
    rows = [r for r in server.records("feedback.jsonl") if r["query_id"] == query_id]
    assert [(r["node_id"], r["score"], r["reasons"], r["comment"]) for r in rows] == [
        ("generated_answer", 5, [], None), ("generated_answer", 1, ["wrong_source"], "alt"),
        (source["node_id"], 1, [], None)]
    assert query_id in {r["query_id"] for r in server.records("search_history.jsonl")}


async def test_interview_draft_edited_saved_and_found_by_query(chat: ChatClient, server: ChatServer) -> None:
    events = await chat.ask("Neues Projekt anlegen: Kräutergarten auf dem Balkon")
    editor = next(d for n, d in events if n == "element" and d["name"] == "DraftEditor")
    assert editor["name"] == "DraftEditor" and editor["props"]["note_type"] == "project"
    assert "title: Kräutergarten" in editor["props"]["markdown"]
    edited = editor["props"]["markdown"].replace("Basilikum und Minze",
                                                 "Basilikum, Minze und Zitronenverbene")
    # typing in the editor stores the text in the session; chatting in between does not lose it
    # what the editor's buttons send: the draft_* actions with the draft id (and the text while typing)
    save = {"name": "draft_save", "payload": {"draft_id": editor["props"]["draft_id"]}}
    assert (await chat.act({**save, "name": "draft_update"}, markdown=edited))["stored"] is True
    await chat.ask("Was ist hybride Suche?")
    reopened = await chat.ask("", command="draft")
    restored = next(d for n, d in reopened if n == "element" and d["name"] == "DraftEditor")
    assert restored["props"]["markdown"] == edited

    result = await chat.act(save)     # without the text: saves what the session holds
    assert result["saved"] is True and result["path"] == "projects/Kräutergarten.md"
    assert "Zitronenverbene" in (server.vault / result["path"]).read_text(encoding="utf-8")
    async with httpx.AsyncClient() as http:
        hits = (await http.post(f"{server.url}/query", json={"query": "Zitronenverbene Kräutergarten Balkon"},
                                timeout=30)).json()["hits"]
    assert hits[0]["path"] == "projects/Kräutergarten.md"


async def test_history_command_lists_recent_searches(chat: ChatClient) -> None:
    await chat.ask("Was ist hybride Suche?")
    events = await chat.ask("", command="history")
    listing = [m["output"] for m in messages(events).values()
               if m["output"].startswith("**Recent searches**")]
    assert listing and "Was ist hybride Suche?" in listing[0]


async def test_reimport_command_reports_the_import(chat: ChatClient) -> None:
    events = await chat.ask("", command="reimport")
    outputs = [m["output"] for m in messages(events).values()]
    assert any(o.startswith("Import finished in") and " notes (" in o for o in outputs)


async def test_unknown_strategy_is_a_readable_error_not_a_traceback(chat: ChatClient) -> None:
    await chat.sio.emit("chat_settings_change", {"strategy": "NOPE"})
    events = await chat.ask("Was ist hybride Suche?")
    errors = [m["output"] for m in messages(events).values() if m.get("isError")]
    assert errors and "unknown strategy 'NOPE'" in errors[0]
    assert "Traceback" not in json.dumps(events)


# --------------------------------------------------------------------------- save & analyze


async def test_suggest_command_lists_links_for_a_note_path(chat: ChatClient, server: ChatServer) -> None:
    before = (server.vault / "projects" / "karate-trainingsplan.md").read_bytes()
    events = await chat.ask("projects/karate-trainingsplan.md", command="suggest")
    listing = [m["output"] for m in messages(events).values() if m["output"].startswith("**Suggestions for")]
    assert listing and listing[0].startswith(
        "**Suggestions for karate-trainingsplan** (projects/karate-trainingsplan.md)")
    assert "1. `" in listing[0] and "**Apply** shows the change to the note first" in listing[0]
    assert (server.vault / "projects" / "karate-trainingsplan.md").read_bytes() == before   # shown, never written
    assert not [m for m in messages(events).values() if m["type"] == "assistant_message"
                and m["output"].startswith("`")]                                         # not asked as a question


async def test_suggest_alone_takes_the_last_answers_top_source(chat: ChatClient) -> None:
    answered = await chat.ask("Warum habe ich Qdrant gewählt?")
    top = answer_of(answered)
    assert top
    events = await chat.ask("", command="suggest")
    assert [m["output"] for m in messages(events).values() if m["output"].startswith("**Suggestions for")]


async def test_suggest_for_an_unknown_note_says_so(chat: ChatClient) -> None:
    events = await chat.ask("nowhere.md", command="suggest")
    assert any("No note `nowhere.md` in the vault's index" in m["output"] for m in messages(events).values())


async def test_draft_editor_asks_for_suggestions_of_its_text(chat: ChatClient) -> None:
    text = "---\ntype: project\n---\n# Balkon\n\nDie Bewässerung hängt ab von Qdrant und nutzt BM25."
    result = await chat.act({"name": "draft_analyze", "payload": {}}, markdown=text, note_type="project")
    first = next(s for s in result["links"] if s["title"] == "qdrant")
    assert first["kind"] == "depends_on" and first["callout"] == "> [!edge] depends_on: [[qdrant]]"
    assert text[first["mention"]["start"]:first["mention"]["end"]] == "Qdrant"
    assert (await chat.act({"name": "draft_analyze", "payload": {}}, markdown="  "))["links"] == []
