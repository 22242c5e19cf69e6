"""The Chainlit chat of mindnet, the module Chainlit loads: wires the server's `Mindnet` to Chainlit.

Here: the session (welcome page, settings panel, commands), each message, and the commands. Each message goes
to `Mindnet.chat.astream`; `answer_view.AnswerView` shows its events as steps (intent, retrieval, graph, scoring,
generation), streamed tokens, an intent badge, source side panels with their "why", and the answer's rating.
Interview drafts open in the `DraftEditor` custom element (`draft_editor`); `/draft` brings the draft back.
Importing those modules (and `suggest`) registers their action callbacks. No retrieval or scoring happens here.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import chainlit as cl
from chainlit.input_widget import MultiSelect, Select, Slider
from pydantic import ValidationError

from mindnet.chat.welcome import starter_questions, welcome_text
from mindnet.ui import render, threads
from mindnet.ui import resume as thread_resume  # a thread's URL, name, and its turns rebuilt on resume
from mindnet.ui import suggest as suggest_ui  # registers the draft editor's `draft_analyze` action
from mindnet.ui.answer_view import AnswerView, show_sources_again  # registers the `rate` action
from mindnet.ui.draft_editor import draft_props, open_draft, restore_draft  # registers the draft editor's actions
from mindnet.ui.guard import readable, say_error
from mindnet.ui.registry import get_mindnet

HISTORY_TURNS = 10
COMMANDS = [
    {"id": "history", "icon": "history", "description": "recent searches", "button": False},
    {"id": "reimport", "icon": "refresh-cw", "description": "re-import the vault", "button": False},
    {"id": "draft", "icon": "file-pen-line", "description": "reopen the current draft", "button": False},
    {"id": "suggest", "icon": "link", "button": False,
     "description": "links for a note, to apply: /suggest PATH or TITLE (alone: the last answer's top source)"},
]


# --------------------------------------------------------------------------- session start and settings


def settings_widgets() -> list[Any]:
    s = get_mindnet().settings
    defaults = {k for t in s.types.types.values() for k in t.edge_defaults}
    kinds = sorted(set(s.retriever.expand.edge_types) | defaults)
    return [
        Select(id="strategy", label="Strategy", values=["auto", *sorted(s.decision_engine.strategies)],
               initial_value="auto", description="auto: the intent router decides"),
        Select(id="mode", label="Search mode", values=["auto", "semantic", "hybrid"], initial_value="auto"),
        Slider(id="top_k", label="Sources (top_k)", initial=0, min=0, max=20, step=1,
               description="0: the strategy's default"),
        Select(id="expand_depth", label="Graph expansion depth", values=["auto", "0", "1", "2", "3"],
               initial_value="auto"),
        MultiSelect(id="edge_types", label="Edge types to follow", items={k: k for k in kinds}, initial=[],
                    description="none selected: the configured edge types"),
    ]


IMPORT_NOW = "Import now"
# the profile's icon is also every answer's avatar, which Chainlit's page asks for as given, without the /ui prefix
# (a "/public/icon.svg" was a 404 on each answer): inline, it needs no request at all
PROFILE_ICON = "data:image/svg+xml;base64," + base64.b64encode(
    (Path(__file__).parent / "public" / "icon.svg").read_bytes()).decode("ascii")


async def welcome() -> tuple[str, list[cl.Starter]]:
    """The welcome page's three lines and its starters: questions about indexed notes, or "Import now"."""
    m = get_mindnet()
    notes = await asyncio.to_thread(m.indexed_notes)
    progress = m.progress.as_dict()
    live = m.live.status() if m.live is not None else {}
    if live.get("pending") or live.get("importing"):    # the server's first import is about to begin
        progress["running"] = True
    text = welcome_text(vault=str(m.settings.vault_root), notes=len(notes), progress=progress)
    if not notes and progress["running"]:      # the import runs already: nothing to start, nothing to ask yet
        return text, []
    if not notes:
        return text, [cl.Starter(label=IMPORT_NOW, message=IMPORT_NOW, command="reimport", icon="/public/icon.svg")]
    return text, [cl.Starter(label=label, message=question) for label, question in starter_questions(notes)]


@cl.set_chat_profiles
async def profiles(user: Any = None, language: str | None = None) -> list[cl.ChatProfile]:
    """One profile: Chainlit shows its description on the welcome page (no picker for a single profile)."""
    text, starters = await welcome()
    return [cl.ChatProfile(name="mindnet", markdown_description=text, icon=PROFILE_ICON, default=True,
                           starters=starters)]


@cl.on_chat_start
@readable
async def start() -> None:
    await cl.ChatSettings(settings_widgets()).send()   # values: cl.user_session "chat_settings"
    cl.user_session.set("history", [])
    await cl.context.emitter.set_commands(COMMANDS)


@cl.on_chat_resume
@readable
async def resume(thread: dict[str, Any]) -> None:
    """A thread reopened from the sidebar or its URL: Chainlit shows its messages; the chat history (for
    condensing follow-ups) and each turn's panels, buttons and draft are rebuilt from them."""
    await cl.ChatSettings(settings_widgets()).send()
    cl.user_session.set("history", threads.resumed_history(thread.get("steps") or [], HISTORY_TURNS))
    # source panels and the draft editor, as they were (the ratings come back through the data layer)
    await thread_resume.rebuild(thread, draft_props=draft_props)
    await cl.context.emitter.set_commands(COMMANDS)



# the page script's messages (mindnet.js): {"mindnet": kind, ...}
WINDOW_MESSAGES: dict[str, Callable[[dict[str, Any]], Awaitable[None]]] = {
    "restore_draft": restore_draft,          # a draft the browser kept, handed back after a reload
    "thread_shown": show_sources_again,      # the page was drawn anew for the thread's address
}


@cl.on_window_message
@readable
async def on_window_message(data: Any) -> None:
    handler = WINDOW_MESSAGES.get(str(data.get("mindnet"))) if isinstance(data, dict) else None
    if handler is not None:
        await handler(data)


# --------------------------------------------------------------------------- chat

COMMAND_IDS = ("history", "reimport", "draft")   # none takes an argument: they run at once


def typed_command(message: cl.Message) -> tuple[str | None, str]:
    """The command and its text: a chip picked from the menu, or "/suggest concepts/bm25.md" typed in one go (the
    composer sends that as plain text)."""
    if message.command:
        return message.command, message.content
    name, _, rest = message.content.strip().partition(" ")
    if name.startswith("/") and name[1:] in {c["id"] for c in COMMANDS}:
        return name[1:], rest.strip()
    return None, message.content


@cl.on_message
@readable
async def on_message(message: cl.Message) -> None:
    command, text = typed_command(message)
    if command == "suggest":           # its text is the note to analyse, not a question
        await suggest_ui.suggest_command(text)
        return
    handler = COMMAND_HANDLERS.get(command or "")
    if handler:
        await handler()
        if not text.strip() or text.strip() == IMPORT_NOW:   # the starter's own text
            return
        # text typed after a command is a question of its own, never swallowed by the command
    await answer(text)


async def answer(text: str) -> None:
    history = cl.user_session.get("history") or []
    try:
        request = render.chat_request(text, history[-HISTORY_TURNS:], cl.user_session.get("chat_settings"),
                                      draft_open=bool(cl.user_session.get("draft")))
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"msg": str(exc), "loc": ()}
        where = ".".join(str(p) for p in first.get("loc", ()))
        await say_error("Invalid request", f"{where}: {first['msg']}" if where else first["msg"])
        return
    response = await AnswerView(request).run()
    if response is None:
        return
    cl.user_session.set("last_sources", response.sources)   # /suggest alone analyses the top one
    history += [{"role": "user", "content": request.message},
                {"role": "assistant", "content": response.answer}]
    cl.user_session.set("history", history)
    if response.draft:
        await open_draft({**response.draft, "draft_id": str(uuid.uuid4()), "query_id": response.query_id})
    await thread_resume.after_answer(request.message, response.sources, response.draft)   # topic name, thread URL


# --------------------------------------------------------------------------- commands


async def reopen_draft() -> None:
    draft = cl.user_session.get("draft")
    if not draft:
        await cl.Message(content="No open draft. Ask for a new note (e.g. \"Neues Projekt anlegen\").").send()
        return
    await open_draft(draft)


async def show_history() -> None:
    records = await asyncio.to_thread(lambda: list(get_mindnet().logs.search_history.read()))
    rows = render.history_rows(records)
    actions = [cl.Action(name="ask_again", label=f"{i}. {shorten(r['query'])}", icon="rotate-ccw",
                         tooltip=f"ask again: {r['query'][:200]}", payload={"query": r["query"]})
               for i, r in enumerate(rows, 1)]
    await cl.Message(content=render.history_markdown(rows), actions=actions).send()


def shorten(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


@cl.action_callback("ask_again")
@readable
async def on_ask_again(action: cl.Action) -> None:
    text = str(action.payload.get("query") or "").strip()
    if text:
        await cl.Message(content=text, type="user_message", author="User").send()
        await answer(text)


async def reimport() -> None:
    m = get_mindnet()
    status = cl.Message(content=f"Re-importing `{m.settings.vault_root}` ...")
    await status.send()
    progress = {"done": 0, "total": 0, "path": ""}
    embedded0 = m.embedder.embedded
    started = time.perf_counter()

    def on_progress(done: int, total: int, path: str) -> None:
        progress.update(done=done, total=total, path=path)

    async def report_progress() -> None:
        while True:
            await asyncio.sleep(0.5)
            status.content = render.progress_markdown(
                done=int(progress["done"]), total=int(progress["total"]), path=str(progress["path"]),
                texts=m.embedder.embedded - embedded0, elapsed=time.perf_counter() - started)
            await status.update()

    ticker = asyncio.create_task(report_progress())
    try:
        report = await m.aingest(progress=on_progress)
    finally:
        ticker.cancel()
    status.content = render.import_report_markdown(report.as_dict())
    await status.update()


COMMAND_HANDLERS: dict[str, Callable[[], Awaitable[None]]] = {
    "history": show_history, "reimport": reimport, "draft": reopen_draft,
}


@cl.action_callback("reimport")
@readable
async def on_reimport(_: cl.Action) -> None:
    await reimport()


@cl.action_callback("history")
@readable
async def on_history(_: cl.Action) -> None:
    await show_history()
