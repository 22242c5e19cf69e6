"""The Chainlit chat of mindnet: wires the server's `Mindnet` to Chainlit and renders what it returns.

Each message goes to `Mindnet.chat.astream`; its events become steps (intent, retrieval, graph, scoring,
generation), streamed tokens, an intent badge, source side panels with their "why", and feedback buttons.
Interview drafts open in the `DraftEditor` custom element (Save to vault / Download / Discard / Preview); the text
typed there is kept in the user session and `/draft` brings it back. A note in the way is shown beside the draft,
and Overwrite replaces exactly that version of it (a backup is kept). No retrieval or scoring happens here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import chainlit as cl
from chainlit.context import context
from chainlit.input_widget import MultiSelect, Select, Slider
from chainlit.utils import utc_now
from pydantic import ValidationError

from mindnet.chat.engine import ChatRequest, ChatResponse
from mindnet.chat.welcome import starter_questions, welcome_text
from mindnet.errors import DraftConflictError, DraftError, MindnetError, VaultWriteError
from mindnet.logs import GENERATED_ANSWER
from mindnet.ui import render, threads
from mindnet.ui import suggest as suggest_ui  # registers the draft editor's `draft_analyze` action
from mindnet.ui.escaping import code_span
from mindnet.ui.registry import get_mindnet

log = logging.getLogger(__name__)

HISTORY_TURNS = 10
SIDE_PANEL_DELAY = 0.3   # seconds
STREAM_REFRESH = 0.08    # seconds between screen updates of a streaming answer
COMMANDS = [
    {"id": "history", "icon": "history", "description": "recent searches", "button": False},
    {"id": "reimport", "icon": "refresh-cw", "description": "re-import the vault", "button": False},
    {"id": "draft", "icon": "file-pen-line", "description": "reopen the current draft", "button": False},
    {"id": "suggest", "icon": "link", "button": False,
     "description": "links, kinds, type and tags for a note: /suggest PATH (alone: the last answer's top source)"},
]


# --------------------------------------------------------------------------- errors at the edge


def readable(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Turn any failure of a callback into a chat message instead of a traceback."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ValidationError as exc:   # a request the core refused: its first problem, in one sentence
            problem = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = ".".join(str(p) for p in problem.get("loc", ()))
            await say_error("Invalid request", f"{where}: {problem['msg']}" if where else str(problem["msg"]))
        except MindnetError as exc:
            await say_error(type(exc).__name__, str(exc))
        except Exception as exc:  # noqa: BLE001 - the edge: show it, log the traceback
            log.exception("chat callback %s failed", fn.__name__)
            await say_error("Unexpected error", f"{type(exc).__name__}: {exc}")
        return None

    return wrapper


async def say_error(title: str, detail: str) -> None:
    await cl.ErrorMessage(content=f"**{render.escape(title)}:** {render.escape(detail)}").send()


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


async def welcome() -> tuple[str, list[cl.Starter]]:
    """The welcome page's three lines and its starters: questions about indexed notes, or "Import now"."""
    m = get_mindnet()
    notes = await asyncio.to_thread(m.indexed_notes)
    text = welcome_text(vault=str(m.settings.vault_root), notes=len(notes))
    if not notes:
        return text, [cl.Starter(label=IMPORT_NOW, message=IMPORT_NOW, command="reimport", icon="/public/icon.svg")]
    return text, [cl.Starter(label=label, message=question) for label, question in starter_questions(notes)]


@cl.set_chat_profiles
async def profiles(user: Any = None, language: str | None = None) -> list[cl.ChatProfile]:
    """One profile: Chainlit shows its description on the welcome page (no picker for a single profile)."""
    text, starters = await welcome()
    return [cl.ChatProfile(name="mindnet", markdown_description=text, icon="/public/icon.svg", default=True,
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
    """A thread reopened from the sidebar: Chainlit shows its messages; the chat history (for condensing
    follow-ups) is rebuilt from them."""
    await cl.ChatSettings(settings_widgets()).send()
    cl.user_session.set("history", threads.resumed_history(thread.get("steps") or [], HISTORY_TURNS))
    await cl.context.emitter.set_commands(COMMANDS)



# --------------------------------------------------------------------------- chat

COMMAND_IDS = ("history", "reimport", "draft")   # none takes an argument: they run at once


@cl.on_message
@readable
async def on_message(message: cl.Message) -> None:
    if message.command == "suggest":           # its text is the note to analyse, not a question
        await suggest_ui.suggest_command(message.content)
        return
    handler = COMMAND_HANDLERS.get(message.command or "")
    if handler:
        await handler()
        if not message.content.strip() or message.content.strip() == IMPORT_NOW:   # the starter's own text
            return
        # text typed after a command chip is a question of its own, never swallowed by the command
    await answer(message.content)


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


class AnswerView:
    """One answer on screen: the "How I answered" step (a sentence per stage, the details inside), then the
    answer message. Sources are attached as soon as retrieval finishes, the text fills in as it streams, and
    whatever arrived stays when the user presses Stop or generation fails."""

    def __init__(self, request: ChatRequest) -> None:
        self.request = request
        self.header = ""
        self.body = ""
        self.sources: list[dict[str, Any]] = []
        self.query_id = ""
        self.message: cl.Message | None = None
        self.how: cl.Step | None = None
        self.sentences: list[str] = []
        self.started = time.perf_counter()
        self.sources_at: float | None = None
        self.pushed = 0.0
        self.failure = ""
        self.notices: list[str] = []

    def content(self, *, notice: str | None = None, cut_off: bool = False, writing: bool = True) -> str:
        return render.answer_markdown(header=self.header, body=self.body, sources=self.sources, notice=notice,
                                      cut_off=cut_off, writing=writing)

    async def run(self) -> ChatResponse | None:
        try:
            async for event in get_mindnet().chat.astream(self.request):
                if event.kind == "done":
                    response = ChatResponse.model_validate(event.data)
                    await self.finish(response)
                    return response
                await self.on_event(event.kind, event.data)
        except asyncio.CancelledError:   # Stop: keep what is on screen, say it was stopped
            if self.how is not None:
                self.how.end = utc_now()
                await asyncio.shield(self.how.update())
            if self.message is not None:
                self.message.content = self.content(notice="Stopped.", cut_off=True, writing=False)
                await asyncio.shield(self.message.update())
            raise
        if self.failure:
            await say_error("Chat problem", self.failure)
        return None

    async def on_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "intent":
            self.header = render.badge(str(data.get("strategy", "?"))) + f" *{render.escape(data.get('reason'))}*"
        if kind in render.STEP_TITLES:
            await self.step(kind, data)
        if kind == "sources":
            self.sources = list(data.get("sources") or [])
            self.query_id = str(data.get("query_id") or "")
            self.sources_at = time.perf_counter()
            await self.show_sources()
        elif kind == "token":
            self.body += str(data.get("text", ""))
            await self.push()
        elif kind == "error":   # a `done` with the partial answer and a notice follows when the engine could
            self.failure = str(data.get("message", "unknown error"))
        elif kind not in render.STEP_TITLES and data.get("message"):   # e.g. "your message was shortened"
            self.notices.append(str(data["message"]))

    async def step(self, kind: str, data: dict[str, Any]) -> None:
        if self.how is None:   # inside this message's run, so it shows above the answer
            run = context.current_step
            self.how = cl.Step(name=render.HOW_TITLE, type="tool", show_input=False,
                               parent_id=run.id if run else None)
            self.how.start = utc_now()
            await self.how.send()
        self.sentences.append(render.how_sentence(kind, data))
        child = cl.Step(name=render.STEP_TITLES[kind], type="tool", parent_id=self.how.id, show_input=False)
        child.start = child.end = utc_now()
        child.output = render.step_output(kind, data)
        await child.send()
        self.how.output = " ".join(self.sentences)
        await self.how.update()

    async def show_sources(self) -> None:
        """The answer message with its numbered sources, before the first token."""
        elements = source_elements(self.sources, question=self.request.message, query_id=self.query_id)
        self.message = cl.Message(content=self.content())
        await self.message.send()    # the numbered list first: it shows at once
        # then the panels (the "[n]" become links); not kept on the message, so its updates never re-send
        # them (that would re-open the side panel the user closed)
        await asyncio.gather(*(e.send(for_id=self.message.id) for e in elements))
        if elements:
            await show_sources_panel(elements, self.query_id, self.request.message)

    async def push(self, force: bool = False) -> None:
        if self.message is None:
            self.message = cl.Message(content=self.content())
            await self.message.send()
            self.pushed = time.perf_counter()
            return
        if force or time.perf_counter() - self.pushed >= STREAM_REFRESH:
            self.pushed = time.perf_counter()
            self.message.content = self.content()
            await self.message.update()

    async def finish(self, response: ChatResponse) -> None:
        self.query_id = response.query_id
        if response.sources and not self.sources:      # a client-less path: sources only in the final answer
            self.sources = response.sources
        self.body = response.answer if (response.cut_off or not self.body) else self.body
        if response.draft:   # the note opens in the editor below; do not show it twice
            self.body = render.without_note_block(self.body)
        if self.how is not None:
            ready = (f"the sources were ready after {(self.sources_at - self.started) * 1000:.0f} ms and "
                     if self.sources_at else "")
            self.how.output = " ".join([*self.sentences, f"Timing: {ready}the whole answer took "
                                        f"{(time.perf_counter() - self.started) * 1000:.0f} ms."])
            self.how.end = utc_now()
            await self.how.update()
        notices = [*self.notices, *([response.notice] if response.notice and response.notice not in response.answer
                                    else [])]
        notice = " ".join(dict.fromkeys(notices)) or None
        content = self.content(notice=notice, cut_off=response.cut_off, writing=False)
        if self.message is None:
            elements = source_elements(self.sources, question=self.request.message, query_id=self.query_id)
            self.message = cl.Message(content=content, elements=elements, actions=feedback_actions(response))
            await self.message.send()
            if elements:
                await show_sources_panel(elements, self.query_id, self.request.message)
            return
        self.message.content = content
        self.message.actions = feedback_actions(response)
        await self.message.update()


def source_elements(sources: list[dict[str, Any]], *, question: str, query_id: str) -> list[cl.CustomElement]:
    """One SourcePanel per source, named "[n]" so the answer's citations "[n]" link to it."""
    return [cl.CustomElement(name=render.source_name(i), display="side",
                             props=render.source_props(i, h, query=question, query_id=query_id))
            for i, h in enumerate(sources, 1)]


async def show_sources_panel(elements: list[Any], query_id: str, question: str) -> None:
    """Chainlit opens its side panel by itself with every side element of the session stacked, titled with the
    last one's name. Point it at this answer's sources under a clear title instead (on wide screens; the page
    script keeps it closed on phones). The elements are already sent, so only the panel event goes out; the
    short wait lets the browser apply Chainlit's own update first."""
    await asyncio.sleep(SIDE_PANEL_DELAY)
    await context.emitter.emit("set_sidebar_elements", {"elements": [e.to_dict() for e in elements],
                                                        "key": query_id})
    await cl.ElementSidebar.set_title(render.sources_title(question, len(elements)))


def feedback_actions(response: ChatResponse, selected: int = 0) -> list[cl.Action]:
    """One pair of thumbs for the answer (the chosen one marked); sources are rated in their panel."""
    if not response.query_id:
        return []
    return answer_rating_actions(response.query_id, selected)


def answer_rating_actions(query_id: str, selected: int = 0) -> list[cl.Action]:
    def rate(score: int, label: str) -> cl.Action:
        chosen = selected == score
        return cl.Action(name="rate", label=f"{label} ✓" if chosen else label, icon="thumbs-up" if score > 3
                         else "thumbs-down", tooltip="your rating; click the other to change it" if chosen
                         else f"rate the answer {score}/5", id=f"rate-{query_id}-{score}",
                         payload={"query_id": query_id, "node_id": GENERATED_ANSWER, "score": score})
    return [rate(5, "Good answer"), rate(1, "Bad answer")]


@cl.action_callback("rate")
@readable
async def on_rate(action: cl.Action) -> dict[str, Any]:
    p = action.payload
    record = get_mindnet().logs.record_feedback(str(p.get("query_id")), int(p.get("score", 0)),
                                                node_id=str(p.get("node_id") or GENERATED_ANSWER))
    what = "answer" if record.node_id == GENERATED_ANSWER else "source"
    if record.node_id == GENERATED_ANSWER and action.forId:   # show the choice: re-send the pair, marked
        for a in answer_rating_actions(record.query_id, record.score):
            await a.remove()
            await a.send(for_id=action.forId)
    await cl.context.emitter.send_toast(f"Feedback saved: {what} rated {record.score}/5", "success")
    return {"recorded": True, "query_id": record.query_id, "node_id": record.node_id, "score": record.score}


# --------------------------------------------------------------------------- interview drafts


async def open_draft(draft: dict[str, Any], intro: str = "Draft") -> None:
    """Show the editor; the draft (with whatever was typed so far) lives in the user session."""
    cl.user_session.set("draft", draft)
    element = cl.CustomElement(name="DraftEditor", props=draft_props(draft), display="inline")
    cl.user_session.set("draft_element", element)
    title = render.escape(draft.get("title") or "draft")
    kind = render.escape(draft.get("note_type"))
    # the editor's own buttons (Save to vault / Download / Discard) call the draft_* actions with its text
    await cl.Message(content=f"{intro} **{title}** ({kind}) - edit it, then save.", elements=[element]).send()


MAX_RESTORED = 1_000_000   # characters of a draft the browser hands back after a reload


@cl.on_window_message
@readable
async def on_window_message(data: Any) -> None:
    """The page script hands back a draft the browser kept (a reload or a closed tab loses nothing)."""
    if not isinstance(data, dict) or data.get("mindnet") != "restore_draft" or cl.user_session.get("draft"):
        return
    kept = data.get("draft")
    if not isinstance(kept, dict) or not isinstance(kept.get("markdown"), str) or \
            len(kept["markdown"]) > MAX_RESTORED:
        return
    draft = {"draft_id": str(kept.get("draft_id") or uuid.uuid4())[:64], "markdown": kept["markdown"],
             "note_type": str(kept.get("note_type") or "")[:64], "title": str(kept.get("title") or "")[:300],
             "warnings": [str(w)[:300] for w in kept.get("warnings") or [] if isinstance(w, str)][:20]}
    await open_draft(draft, intro="Restored your unsaved draft")


def draft_props(draft: dict[str, Any], status: str = "editing", detail: str = "",
                conflict: dict[str, Any] | None = None) -> dict[str, Any]:
    """The editor's props; with `conflict` (status "conflict") the note in the vault: path, text, version."""
    keys = ("draft_id", "markdown", "note_type", "title", "warnings")
    shown = {k: conflict.get(k) for k in ("path", "reason", "existing", "version")} if conflict else None
    return {**{k: draft.get(k) for k in keys}, "status": status, "detail": detail, "conflict": shown}


def current_draft(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The session draft, with the text the editor sent along (the editor is the newest copy)."""
    draft = cl.user_session.get("draft")
    if not draft or (payload.get("draft_id") and payload["draft_id"] != draft.get("draft_id")):
        return None
    if isinstance(payload.get("markdown"), str):
        draft["markdown"] = payload["markdown"]
        cl.user_session.set("draft", draft)
    return draft


async def show_draft_status(draft: dict[str, Any], status: str, detail: str = "",
                            conflict: dict[str, Any] | None = None) -> None:
    element: cl.CustomElement | None = cl.user_session.get("draft_element")
    if element is not None:
        element.props = draft_props(draft, status, detail, conflict)
        await element.update()


@cl.action_callback("draft_update")
async def on_draft_update(action: cl.Action) -> dict[str, Any]:
    draft = current_draft(action.payload)
    return {"stored": draft is not None}


@cl.action_callback("draft_save")
@readable
async def on_draft_save(action: cl.Action) -> dict[str, Any] | None:
    draft = current_draft(action.payload)
    if draft is None:
        await say_error("No draft", "there is no open draft to save (it was saved or discarded already)")
        return None
    replaces = action.payload.get("replaces")
    choice = {"overwrite": bool(action.payload.get("overwrite")), "new_name": bool(action.payload.get("new_name")),
              "replaces": replaces if isinstance(replaces, str) else None}
    await clear_conflict()
    try:
        saved = await get_mindnet().asave_draft(draft["markdown"], draft.get("note_type") or "", **choice)
    except DraftConflictError as exc:
        shown = f"{exc.path}: {exc.message}" if exc.path else exc.message    # the choices below are the fix
        await show_draft_status(draft, "conflict" if exc.conflict else "error", shown, exc.conflict)
        await ask_on_conflict(draft, exc)
        return {"saved": False, "conflict": True}
    except (DraftError, VaultWriteError) as exc:
        await show_draft_status(draft, "error", str(exc))
        await cl.Message(content=f"**Not saved:** {render.escape(exc)}\n\nThe draft is still open.").send()
        return {"saved": False}
    cl.user_session.set("draft", None)
    await show_draft_status(draft, "saved", str(saved.get("path", "")))
    report = saved.get("import") or {}
    imported = render.import_markdown(report) if report else "Imported."
    backup = saved.get("backup")
    kept = f" The note's previous text is kept in {code_span(backup)}." if backup else ""
    await cl.Message(content=f"Saved **{render.escape(saved.get('title'))}** to "
                             f"{code_span(saved.get('path'))}.{kept} {imported}").send()
    return {"saved": True, "path": str(saved.get("path")), "note_id": saved.get("note_id"), "backup": backup}


async def ask_on_conflict(draft: dict[str, Any], exc: DraftConflictError) -> None:
    """A note of that name exists (or changed since it was shown, or another note has the id): overwrite exactly
    the version shown in the editor, save under a free name, or keep editing."""
    base = {"draft_id": draft["draft_id"]}
    conflict = exc.conflict or {}
    actions = []
    if conflict.get("version"):
        actions.append(cl.Action(name="draft_save", label="Overwrite", icon="file-pen-line",
                                 tooltip="replace the note as shown in the editor; its text is kept as a backup",
                                 payload={**base, "overwrite": True, "replaces": conflict["version"]}))
    elif conflict:       # the note is gone since: save the draft where it was
        actions.append(cl.Action(name="draft_save", label="Save", icon="save", tooltip="save the draft as a new note",
                                 payload=base))
    actions += [cl.Action(name="draft_save", label="Save as new name", icon="copy-plus",
                          tooltip="save as 'Title (2)' beside the existing note", payload={**base, "new_name": True}),
                cl.Action(name="draft_cancel", label="Cancel", icon="x", tooltip="keep editing; nothing is saved",
                          payload=base)]
    if conflict.get("version"):
        what = f"{exc.path}: {exc.message}" if exc.path else exc.message
        choices = ("The note in the vault and your draft are side by side in the editor above. Overwrite the note "
                   "(its current text is kept as a backup), save your draft under a new name, or cancel?")
    else:
        what, choices = str(exc), "Save your draft, save it under a new name, or cancel?"
    message = cl.Message(content=f"**Not saved:** {render.escape(what)}\n\n{choices}", actions=actions)
    cl.user_session.set("conflict_message", message)
    await message.send()


async def clear_conflict() -> None:
    message: cl.Message | None = cl.user_session.get("conflict_message")
    if message is not None:
        cl.user_session.set("conflict_message", None)
        for a in message.actions:
            await a.remove()


@cl.action_callback("draft_cancel")
@readable
async def on_draft_cancel(action: cl.Action) -> None:
    await clear_conflict()
    draft = current_draft(action.payload)
    if draft is not None:
        await show_draft_status(draft, "editing")
    await cl.Message(content="Not saved; the draft is still open.").send()


@cl.action_callback("draft_download")
@readable
async def on_draft_download(action: cl.Action) -> None:
    draft = current_draft(action.payload)
    if draft is None:
        await say_error("No draft", "there is no open draft to download")
        return
    name = render.draft_filename(draft)
    file = cl.File(name=name, content=draft["markdown"].encode("utf-8"), mime="text/markdown",
                   display="inline")
    await cl.Message(content=f"Download: {render.escape(name)}", elements=[file]).send()


@cl.action_callback("draft_discard")
@readable
async def on_draft_discard(action: cl.Action) -> None:
    draft = current_draft(action.payload)
    if draft is None:
        return
    cl.user_session.set("draft", None)
    await show_draft_status(draft, "discarded")
    await cl.Message(content="Draft discarded.").send()


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
