"""Conversations that come back whole: each thread's own URL, its name, and its turns rebuilt on resume.

- URL: Chainlit moves the page to `<root>/thread/<id>` after the first message only when it is served at "/";
  mounted at /ui the address stays `/ui/`, so a reload opened an empty chat. After the first answer the server
  tells the page script (`mindnet.js`) the thread's id, and the script puts the thread's URL in the address bar.
- Name: Chainlit names a thread after its first interaction: the first question, or, when that is a button (an
  action, e.g. the draft editor's `draft_analyze` after a restored draft), the action's name. The data layer
  (`threads.SQLiteDataLayer`) drops action names; mindnet names the thread by its topic (`thread_title`).
- Turns: the data layer stores messages, not source panels, buttons or the draft editor. What a turn needs is
  kept in the message's metadata (`TURN_KEY`: the panels' props and the query_id; `DRAFT_KEY`: the draft, its
  text and status), and `rebuild` puts the panels (with the sources' ratings of the feedback log) and the draft
  editor back when the thread is resumed. Each answer's own rating element comes back through the data layer
  (`rating.thread_ratings`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import chainlit as cl
from chainlit.data import get_data_layer

from mindnet.logs import GENERATED_ANSWER
from mindnet.ui import render
from mindnet.ui.registry import get_mindnet

TURN_KEY = "mindnet_turn"
DRAFT_KEY = "mindnet_draft"
TITLE_LIMIT = 60


# --------------------------------------------------------------------------- what a turn keeps


def turn_metadata(panels: Iterable[Mapping[str, Any]], *, query_id: str, question: str) -> dict[str, Any]:
    """The answer message's metadata: the source panels' props (sources, score breakdowns, "why") and the
    query_id its ratings refer to (also at the top, where `rating.step_query_id` finds the answer's rating)."""
    return {"query_id": query_id,
            TURN_KEY: {"query_id": query_id, "question": question, "panels": [dict(p) for p in panels]}}


def stored_metadata(step: Mapping[str, Any]) -> dict[str, Any]:
    """A stored step's metadata as a dict (SQLite gives it back as JSON text)."""
    meta = step.get("metadata") or {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return {}
    return meta if isinstance(meta, dict) else {}


def latest_ratings(records: Iterable[Mapping[str, Any]], query_ids: set[str]) -> dict[tuple[str, str], int]:
    """(query_id, node_id) -> the latest score given, for the searches of one thread."""
    ratings: dict[tuple[str, str], int] = {}
    for r in records:
        query_id, score = str(r.get("query_id")), r.get("score")
        if query_id in query_ids and isinstance(score, int):
            ratings[(query_id, str(r.get("node_id") or GENERATED_ANSWER))] = score
    return ratings


# --------------------------------------------------------------------------- the thread's name and URL


def shorten(text: str, limit: int = TITLE_LIMIT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def thread_title(question: str, sources: list[Mapping[str, Any]], draft: Mapping[str, Any] | None = None) -> str:
    """A thread's name by its topic: the new note's title for an interview, else the top source's title, else
    the question (shortened)."""
    if draft and draft.get("title"):
        return shorten(f"New note: {draft['title']}")
    top = sources[0] if sources else None
    if top and (top.get("title") or top.get("note_id")):
        return shorten(str(top.get("title") or top.get("note_id")))
    return shorten(question.rstrip("?!. ")) or "Conversation"


async def name_thread(title: str) -> None:
    """Name the current thread once (a resumed thread keeps its name)."""
    layer = get_data_layer()
    if layer is None or cl.user_session.get("thread_named"):
        return
    cl.user_session.set("thread_named", True)
    thread_id = cl.context.session.thread_id
    if hasattr(layer, "name_by_topic"):
        await layer.name_by_topic(thread_id, title)
    else:
        await layer.update_thread(thread_id=thread_id, name=title)


async def show_thread_url() -> None:
    """Tell the page script the thread's id once, so the address bar shows the thread's own URL."""
    if get_data_layer() is None or cl.user_session.get("thread_url_shown"):
        return
    cl.user_session.set("thread_url_shown", True)
    await cl.send_window_message({"mindnet": "thread", "thread_id": cl.context.session.thread_id})


async def after_answer(question: str, sources: list[Mapping[str, Any]], draft: Mapping[str, Any] | None) -> None:
    await name_thread(thread_title(question, sources, draft))
    await show_thread_url()


# --------------------------------------------------------------------------- drafts


async def keep_draft(draft: Mapping[str, Any], status: str = "editing", detail: str = "") -> None:
    """Store the draft (its current text and status) in its message, so a resumed thread reopens it."""
    message: cl.Message | None = cl.user_session.get("draft_message")
    if message is None:
        return
    message.metadata = {**(message.metadata or {}), DRAFT_KEY: {**draft, "status": status, "detail": detail}}
    # into the thread store only: `message.update()` would send the message and its elements to the page again,
    # and the editor, sent anew with the props it was opened with, would drop what was typed since
    layer = get_data_layer()
    if layer is not None:
        await layer.update_step(message.to_dict())


# --------------------------------------------------------------------------- resume


async def rebuild(thread: dict[str, Any], *,
                  draft_props: Callable[[dict[str, Any], str, str], dict[str, Any]]) -> None:
    """Put back what the data layer does not store: each answer's source panels (added to the thread's
    elements, which Chainlit shows with it) and the thread's last draft in its editor (`draft_props(draft,
    status, detail)`). The answers' rating elements the data layer adds itself (`rating.thread_ratings`)."""
    steps = sorted(thread.get("steps") or [], key=lambda s: s.get("createdAt") or "")
    cl.user_session.set("thread_named", bool(thread.get("name")))
    cl.user_session.set("thread_url_shown", True)           # opened by its URL
    turns = [(s, stored_metadata(s).get(TURN_KEY)) for s in steps]
    turns = [(s, t) for s, t in turns if isinstance(t, dict)]
    query_ids = {str(t.get("query_id")) for _, t in turns if t.get("query_id")}
    records = await asyncio.to_thread(lambda: list(get_mindnet().logs.feedback.read())) if query_ids else []
    ratings = latest_ratings(records, query_ids)
    elements: list[dict[str, Any]] = list(thread.get("elements") or [])
    last_sources: list[dict[str, Any]] = []
    for step, turn in turns:
        query_id = str(turn.get("query_id") or "")
        panels = [p for p in turn.get("panels") or [] if isinstance(p, dict)]
        for props in panels:
            shown = {**props, "rating": ratings.get((query_id, str(props.get("node_id"))), 0)}
            panel = cl.CustomElement(name=render.source_name(int(props.get("index") or 0)), display="side",
                                     props=shown, for_id=step["id"])
            elements.append(panel.to_dict())
        last_sources = [{"path": p.get("path"), "note_id": p.get("node_id")} for p in panels] or last_sources
    if last_sources:
        cl.user_session.set("last_sources", last_sources)      # `/suggest` alone: the last answer's top source
    drafts = [(s, stored_metadata(s).get(DRAFT_KEY)) for s in steps]
    drafts = [(s, d) for s, d in drafts if isinstance(d, dict)]
    cl.user_session.set("draft", None)
    if drafts:
        elements.append(reopen_draft(*drafts[-1], draft_props))
    thread["elements"] = elements


def reopen_draft(step: dict[str, Any], stored: dict[str, Any],
                 draft_props: Callable[[dict[str, Any], str, str], dict[str, Any]]) -> dict[str, Any]:
    """The thread's last draft in its editor, as it was left: editable again, or saved / discarded."""
    status = "saved" if stored.get("status") == "saved" else "discarded" if stored.get("status") == "discarded" \
        else "editing"
    draft = {k: v for k, v in stored.items() if k not in ("status", "detail")}
    message = cl.Message.from_dict(step)
    message.metadata = stored_metadata(step)
    element = cl.CustomElement(name="DraftEditor", display="inline", for_id=step["id"],
                               props=draft_props(draft, status, str(stored.get("detail") or "")))
    cl.user_session.set("draft_message", message)
    cl.user_session.set("draft_element", element)
    if status == "editing":
        cl.user_session.set("draft", draft)
    return element.to_dict()
