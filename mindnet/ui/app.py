"""The Chainlit chat of mindnet: wires the server's `Mindnet` to Chainlit and renders what it returns.

Each message goes to `Mindnet.chat.astream`; its events become steps (intent, retrieval, graph, scoring,
generation), streamed tokens, an intent badge, source side panels with their "why", and feedback buttons.
Interview drafts open in the `DraftEditor` custom element (Save to vault / Download / Discard); the text typed
there is kept in the user session and `/draft` brings it back. No retrieval or scoring happens here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import chainlit as cl
from chainlit.context import context
from chainlit.input_widget import MultiSelect, Select, Slider

from mindnet.chat.engine import ChatRequest, ChatResponse
from mindnet.errors import DraftError, MindnetError
from mindnet.logs import GENERATED_ANSWER
from mindnet.ui import render
from mindnet.ui.registry import get_mindnet

log = logging.getLogger(__name__)

HISTORY_TURNS = 10
SIDE_PANEL_DELAY = 0.3   # seconds
STAGES = tuple(render.STEP_TITLES)
COMMANDS = [
    {"id": "history", "icon": "history", "description": "recent searches", "button": False},
    {"id": "reimport", "icon": "refresh-cw", "description": "re-import the vault", "button": False},
    {"id": "draft", "icon": "file-pen-line", "description": "reopen the current draft", "button": False},
]
EXAMPLES = [
    ("Warum Qdrant?", "Warum habe ich Qdrant gewählt?"),
    ("Karate plan", "What does the Karate training plan depend on?"),
    ("Hybride Suche", "Was ist hybride Suche?"),
    ("Neues Projekt", "Neues Projekt anlegen"),
]


# --------------------------------------------------------------------------- errors at the edge


def readable(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Turn any failure of a callback into a chat message instead of a traceback."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
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


@cl.set_starters
async def starters(user: Any = None, language: str | None = None) -> list[cl.Starter]:
    return [cl.Starter(label=label, message=message) for label, message in EXAMPLES]


@cl.on_chat_start
@readable
async def start() -> None:
    await cl.ChatSettings(settings_widgets()).send()   # values: cl.user_session "chat_settings"
    cl.user_session.set("history", [])
    await cl.context.emitter.set_commands(COMMANDS)


# --------------------------------------------------------------------------- chat


@cl.on_message
@readable
async def on_message(message: cl.Message) -> None:
    handler = COMMAND_HANDLERS.get(message.command or "")
    if handler:
        await handler()
        return
    history = cl.user_session.get("history") or []
    try:
        request = render.chat_request(message.content, history[-HISTORY_TURNS:],
                                      cl.user_session.get("chat_settings"))
    except ValueError as exc:
        await say_error("Invalid request", str(exc))
        return
    response = await stream_answer(request)
    if response is None:
        return
    history += [{"role": "user", "content": request.message},
                {"role": "assistant", "content": response.answer}]
    cl.user_session.set("history", history)
    if response.draft:
        await open_draft({**response.draft, "draft_id": str(uuid.uuid4()), "query_id": response.query_id})


async def stream_answer(request: ChatRequest) -> ChatResponse | None:
    """Run the engine: each stage a step, tokens into one message, then badge, sources and feedback."""
    m = get_mindnet()
    answer: cl.Message | None = None
    header = ""
    async for event in m.chat.astream(request):
        if event.kind in STAGES:
            if event.kind == "intent":
                header = render.badge(str(event.data.get("strategy", "?"))) + "\n\n"
            async with cl.Step(name=render.STEP_TITLES[event.kind], type="tool", show_input=False) as step:
                step.output = render.step_output(event.kind, event.data)
        elif event.kind == "token":
            if answer is None:
                answer = cl.Message(content=header)
            await answer.stream_token(str(event.data.get("text", "")))
        elif event.kind == "error":   # e.g. generation stopped midway; a `done` with a notice may follow
            await say_error("Chat problem", str(event.data.get("message", "unknown error")))
        elif event.kind == "done":
            response = ChatResponse.model_validate(event.data)
            await finish_answer(answer or cl.Message(content=header), response, streamed=answer is not None,
                                question=request.message)
            return response
    return None


async def finish_answer(message: cl.Message, response: ChatResponse, *, streamed: bool, question: str) -> None:
    vault = get_mindnet().settings.vault_root
    text = response.answer if response.answer.strip() else "_(no answer generated)_"
    parts = [render.badge(response.intent) + f" *{render.escape(response.reason)}*", "", text]
    if response.notice and response.notice not in response.answer:
        parts += ["", f"> ⚠ {render.escape(response.notice)}"]
    if response.sources:
        parts += ["", "**Sources**"] + [render.source_summary(i, h)
                                         for i, h in enumerate(response.sources, 1)]
    message.content = "\n".join(parts)
    message.elements = [cl.Text(name=render.source_name(i, h), display="side",
                                content=render.source_markdown(h, vault_root=vault))
                        for i, h in enumerate(response.sources, 1)]
    message.actions = feedback_actions(response)
    if streamed:
        await message.update()
    else:
        await message.send()
    if message.elements:
        await show_sources_panel(message.elements, response, question)


async def show_sources_panel(elements: list[cl.Text], response: ChatResponse, question: str) -> None:
    """Chainlit opens its side panel by itself with every side element of the session stacked, titled with the
    last one's name. Point it at this answer's sources under a clear title instead. The elements are already
    sent, so only the panel event goes out (re-sending them would make Chainlit open its own panel again);
    the short wait lets the browser apply Chainlit's own update first."""
    await asyncio.sleep(SIDE_PANEL_DELAY)
    await context.emitter.emit("set_sidebar_elements",
                               {"elements": [e.to_dict() for e in elements], "key": response.query_id})
    await cl.ElementSidebar.set_title(render.sources_title(question, len(elements)))


def feedback_actions(response: ChatResponse) -> list[cl.Action]:
    def rate(node_id: str, score: int, label: str, tooltip: str) -> cl.Action:
        icon = "thumbs-up" if score > 3 else "thumbs-down"
        return cl.Action(name="rate", label=label, tooltip=tooltip, icon=icon,
                         payload={"query_id": response.query_id, "node_id": node_id, "score": score})

    actions = [rate(GENERATED_ANSWER, 5, "Good answer", "rate the answer 5/5"),
               rate(GENERATED_ANSWER, 1, "Bad answer", "rate the answer 1/5")]
    for i, hit in enumerate(response.sources, 1):
        node_id = str(hit.get("node_id") or hit.get("note_id"))
        actions += [rate(node_id, 5, f"[{i}]", f"source {i} helped (5/5)"),
                    rate(node_id, 1, f"[{i}]", f"source {i} did not help (1/5)")]
    return actions


@cl.action_callback("rate")
@readable
async def on_rate(action: cl.Action) -> dict[str, Any]:
    p = action.payload
    record = get_mindnet().logs.record_feedback(str(p.get("query_id")), int(p.get("score", 0)),
                                                node_id=str(p.get("node_id") or GENERATED_ANSWER))
    what = "answer" if record.node_id == GENERATED_ANSWER else "source"
    await cl.context.emitter.send_toast(f"Feedback saved: {what} rated {record.score}/5", "success")
    return {"recorded": True, "query_id": record.query_id, "node_id": record.node_id, "score": record.score}


# --------------------------------------------------------------------------- interview drafts


async def open_draft(draft: dict[str, Any]) -> None:
    """Show the editor; the draft (with whatever was typed so far) lives in the user session."""
    cl.user_session.set("draft", draft)
    element = cl.CustomElement(name="DraftEditor", props=draft_props(draft), display="inline")
    cl.user_session.set("draft_element", element)
    title = render.escape(draft.get("title") or "draft")
    kind = render.escape(draft.get("note_type"))
    # the editor's own buttons (Save to vault / Download / Discard) call the draft_* actions with its text
    await cl.Message(content=f"Draft **{title}** ({kind}) - edit it, then save.", elements=[element]).send()


def draft_props(draft: dict[str, Any], status: str = "editing", detail: str = "") -> dict[str, Any]:
    keys = ("draft_id", "markdown", "note_type", "title", "warnings")
    return {**{k: draft.get(k) for k in keys}, "status": status, "detail": detail}


def current_draft(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The session draft, with the text the editor sent along (the editor is the newest copy)."""
    draft = cl.user_session.get("draft")
    if not draft or (payload.get("draft_id") and payload["draft_id"] != draft.get("draft_id")):
        return None
    if isinstance(payload.get("markdown"), str):
        draft["markdown"] = payload["markdown"]
        cl.user_session.set("draft", draft)
    return draft


async def show_draft_status(draft: dict[str, Any], status: str, detail: str = "") -> None:
    element: cl.CustomElement | None = cl.user_session.get("draft_element")
    if element is not None:
        element.props = draft_props(draft, status, detail)
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
    overwrite = bool(action.payload.get("overwrite"))
    try:
        saved = await get_mindnet().asave_draft(draft["markdown"], draft.get("note_type") or "",
                                                overwrite=overwrite)
    except DraftError as exc:
        await show_draft_status(draft, "error", str(exc))
        again = cl.Action(name="draft_save", label="Overwrite the existing note",
                          payload={"draft_id": draft["draft_id"], "overwrite": True})
        await cl.ErrorMessage(content=f"**Not saved:** {render.escape(exc)}", actions=[again]).send()
        return {"saved": False}
    cl.user_session.set("draft", None)
    await show_draft_status(draft, "saved", str(saved.get("path", "")))
    report = saved.get("import") or {}
    imported = render.import_markdown(report) if report else "Imported."
    await cl.Message(content=f"Saved **{render.escape(saved.get('title'))}** to "
                             f"`{saved.get('path')}`. {imported}").send()
    return {"saved": True, "path": str(saved.get("path")), "note_id": saved.get("note_id")}


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
    await cl.Message(content=render.history_markdown(records)).send()


async def reimport() -> None:
    m = get_mindnet()
    status = cl.Message(content=f"Re-importing `{m.settings.vault_root}` ...")
    await status.send()
    progress = {"done": 0, "total": 0, "path": ""}

    def on_progress(done: int, total: int, path: str) -> None:
        progress.update(done=done, total=total, path=path)

    async def report_progress() -> None:
        while True:
            await asyncio.sleep(0.5)
            status.content = (f"Re-importing ... {progress['done']}/{progress['total']} changed notes "
                              f"({render.escape(progress['path'])})")
            await status.update()

    ticker = asyncio.create_task(report_progress())
    try:
        report = await m.aingest(progress=on_progress)
    finally:
        ticker.cancel()
    status.content = render.import_markdown(report.as_dict())
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
