"""Interview drafts in the chat: the `DraftEditor` element and its actions (Save to vault / Download / Discard,
and the choices when a note is in the way), and the draft a reloaded page hands back. The text typed in the
editor is kept in the user session; saving is `Mindnet.asave_draft`, which keeps a backup of a replaced note.
"""

from __future__ import annotations

import uuid
from typing import Any

import chainlit as cl

from mindnet.errors import DraftConflictError, DraftError, VaultWriteError
from mindnet.ui import render, resume
from mindnet.ui.draft_conflict import CHOICES, OTHER_CHOICES, conflict_actions, conflict_props, conflict_sentence
from mindnet.ui.escaping import code_span
from mindnet.ui.guard import readable, say_error
from mindnet.ui.registry import get_mindnet


async def open_draft(draft: dict[str, Any], intro: str = "Draft") -> None:
    """Show the editor; the draft (with whatever was typed so far) lives in the user session."""
    cl.user_session.set("draft", draft)
    element = cl.CustomElement(name="DraftEditor", props=draft_props(draft), display="inline")
    cl.user_session.set("draft_element", element)
    title = render.escape(draft.get("title") or "draft")
    kind = render.escape(draft.get("note_type"))
    # the editor's own buttons (Save to vault / Download / Discard) call the draft_* actions with its text;
    # the draft travels in the message's metadata, so a resumed thread reopens it (`resume.keep_draft`)
    message = cl.Message(content=f"{intro} **{title}** ({kind}) - edit it, then save.", elements=[element],
                         metadata={resume.DRAFT_KEY: {**draft, "status": "editing", "detail": ""}})
    cl.user_session.set("draft_message", message)
    await message.send()


MAX_RESTORED = 1_000_000   # characters of a draft the browser hands back after a reload


async def restore_draft(data: dict[str, Any]) -> None:
    """The page script hands back a draft the browser kept (a reload or a closed tab loses nothing)."""
    if cl.user_session.get("draft"):
        return
    kept = data.get("draft")
    if not isinstance(kept, dict) or not isinstance(kept.get("markdown"), str) or \
            len(kept["markdown"]) > MAX_RESTORED:
        return
    draft = {"draft_id": str(kept.get("draft_id") or uuid.uuid4())[:64], "markdown": kept["markdown"],
             "note_type": str(kept.get("note_type") or "")[:64], "title": str(kept.get("title") or "")[:300],
             "warnings": [str(w)[:300] for w in kept.get("warnings") or [] if isinstance(w, str)][:20]}
    await open_draft(draft, intro="Restored your unsaved draft")
    await resume.name_thread(resume.thread_title("", [], draft))   # not after the editor's first action


def draft_props(draft: dict[str, Any], status: str = "editing", detail: str = "",
                conflict: dict[str, Any] | None = None) -> dict[str, Any]:
    """The editor's props; with `conflict` (status "conflict") the note in the vault: path, text, version, diff."""
    keys = ("draft_id", "markdown", "note_type", "title", "warnings")
    return {**{k: draft.get(k) for k in keys}, "status": status, "detail": detail,
            "conflict": conflict_props(conflict)}


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
    await resume.keep_draft(draft, status if status in ("saved", "discarded") else "editing",
                            detail if status == "saved" else "")


@cl.action_callback("draft_update")
async def on_draft_update(action: cl.Action) -> dict[str, Any]:
    draft = current_draft(action.payload)
    if draft is not None:
        await resume.keep_draft(draft)
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
              "merge": bool(action.payload.get("merge")), "replaces": replaces if isinstance(replaces, str) else None}
    await clear_conflict()
    try:
        saved = await get_mindnet().asave_draft(draft["markdown"], draft.get("note_type") or "", **choice)
    except DraftConflictError as exc:
        await show_draft_status(draft, "conflict" if exc.conflict else "error", conflict_sentence(exc), exc.conflict)
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
    done = "Added your draft's text to the end of" if choice["merge"] else \
        f"Saved **{render.escape(saved.get('title'))}** to"
    await cl.Message(content=f"{done} {code_span(saved.get('path'))}.{kept} {imported}").send()
    return {"saved": True, "path": str(saved.get("path")), "note_id": saved.get("note_id"), "backup": backup}


async def ask_on_conflict(draft: dict[str, Any], exc: DraftConflictError) -> None:
    """A note of that name exists (or changed since it was shown, or another note has the id): replace or merge into
    exactly the version shown in the editor, save under a free name, or keep editing."""
    actions = conflict_actions(draft["draft_id"], exc.conflict)
    choices = CHOICES if (exc.conflict or {}).get("version") else OTHER_CHOICES
    message = cl.Message(content=f"**Not saved:** {render.escape(conflict_sentence(exc))}\n\n{choices}",
                         actions=actions)
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
