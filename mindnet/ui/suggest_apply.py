"""`/suggest` in the chat writes a note only when asked: Apply (one suggestion, or all) shows the diff of the note
first; "Write to the note" then writes it through the code path of `mindnet suggest --apply` (`plan_edges`,
`write_plan`: an atomic compare-and-replace under the vault's write lock, with a backup under
`<vault>/.mindnet/backups/`) and re-imports; Undo puts the backup back (`undo_plan`), refusing when the note
changed since.

Wiring and rendering only. The suggestions and plans of a chat live in its user session, so a button of another
chat (or an old one after a restart) finds nothing and says so.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import chainlit as cl

from mindnet import safe_write
from mindnet.analysis.apply import EdgePlan, plan_edges, undo_plan, write_plan
from mindnet.analysis.models import LinkSuggestion
from mindnet.errors import NoteChangedError, VaultError
from mindnet.ui import render
from mindnet.ui.escaping import code_block, code_span
from mindnet.ui.guard import readable, say_error
from mindnet.ui.registry import get_mindnet
from mindnet.wording import plural

RUNS = "suggest_runs"       # user session: run id -> {"path", "links", "version"} of one /suggest list
PLANS = "suggest_plans"     # user session: plan id -> {"plan", "count", "message", "backup"}
GONE = ("This list is from an earlier session (the page was reloaded or the server restarted); type `/suggest` "
        "again.")


def _session(key: str) -> dict[str, Any]:
    store = cl.user_session.get(key)
    if store is None:
        store = {}
        cl.user_session.set(key, store)
    return store


def note_version(rel_path: str) -> str | None:
    data = safe_write.read_note(Path(get_mindnet().settings.vault_root) / rel_path)
    return None if data is None else safe_write.version_of(data)


def apply_actions(rel_path: str | None, links: list[LinkSuggestion]) -> list[cl.Action]:
    """An Apply button per suggestion and one for all; the list is kept in the session with the note's version."""
    if not rel_path or not links:
        return []
    run = uuid.uuid4().hex
    _session(RUNS)[run] = {"path": rel_path, "links": links, "version": note_version(rel_path)}
    actions = [cl.Action(name="suggest_preview", label=f"Apply {i}", icon="link",
                         tooltip=f"add {s.relation.kind} → {s.title} to the note (shows the change first)",
                         payload={"run": run, "picks": [i - 1]})
               for i, s in enumerate(links, 1)]
    if len(links) > 1:
        actions.append(cl.Action(name="suggest_preview", label="Apply all", icon="list-checks",
                                 tooltip="add all these links to the note (shows the change first)",
                                 payload={"run": run, "picks": list(range(len(links)))}))
    return actions


@cl.action_callback("suggest_preview")
@readable
async def on_preview(action: cl.Action) -> None:
    run = _session(RUNS).get(str(action.payload.get("run")))
    if run is None:
        await say_error("Not applied", GONE)
        return
    picks = [i for i in action.payload.get("picks") or [] if isinstance(i, int) and 0 <= i < len(run["links"])]
    links = [run["links"][i] for i in picks]
    path = run["path"]
    if await asyncio.to_thread(note_version, path) != run["version"]:
        await say_error("Not applied", f"{path} changed since these suggestions were made (edited, or links were "
                                       f"applied); nothing was written. Type /suggest {path} for a fresh list.")
        return
    root = Path(get_mindnet().settings.vault_root)
    plan = await asyncio.to_thread(plan_edges, root, path, links)
    plan_id = uuid.uuid4().hex
    actions = [cl.Action(name="suggest_write", label="Write to the note", icon="check",
                         tooltip="write this change; the note's current text is kept as a backup",
                         payload={"plan": plan_id}),
               cl.Action(name="suggest_cancel", label="Cancel", icon="x", tooltip="write nothing",
                         payload={"plan": plan_id})]
    message = cl.Message(content=f"**Preview:** {plural(len(links), 'link')} to add to {code_span(path)} "
                                 f"(nothing is written yet):\n\n{code_block(plan.diff, 'diff')}",
                         author="mindnet", actions=actions)
    _session(PLANS)[plan_id] = {"plan": plan, "count": len(links), "message": message, "backup": None}
    await message.send()


async def _close_preview(entry: dict[str, Any]) -> None:
    message: cl.Message | None = entry.get("message")
    if message is not None:
        entry["message"] = None
        for a in message.actions:
            await a.remove()


@cl.action_callback("suggest_cancel")
@readable
async def on_cancel(action: cl.Action) -> None:
    entry = _session(PLANS).pop(str(action.payload.get("plan")), None)
    if entry is not None:
        await _close_preview(entry)
    await cl.Message(content="Nothing was written.", author="mindnet").send()


def _shown(backup: Path) -> str:
    return safe_write.shown_path(Path(get_mindnet().settings.vault_root), backup)


async def _reimport() -> str:
    report = await get_mindnet().aingest()
    return render.import_markdown(report.as_dict())


@cl.action_callback("suggest_write")
@readable
async def on_write(action: cl.Action) -> None:
    plan_id = str(action.payload.get("plan"))
    entry = _session(PLANS).get(plan_id)
    if entry is None or entry["backup"] is not None:
        await say_error("Not written", "this preview was written or cancelled already" if entry else GONE)
        return
    plan: EdgePlan = entry["plan"]
    root = Path(get_mindnet().settings.vault_root)
    await _close_preview(entry)
    try:
        backup = await asyncio.to_thread(write_plan, plan, root)
    except NoteChangedError:
        await say_error("Not written", f"{plan.rel_path} changed since the preview was made; nothing was written. "
                                       f"Type /suggest {plan.rel_path} for a fresh list.")
        return
    entry["backup"] = backup      # Apply in a list made before this write is refused: the note's version changed
    imported = await _reimport()
    undo = cl.Action(name="suggest_undo", label="Undo", icon="undo-2",
                     tooltip="put the note's previous text back (only while nobody changed it since)",
                     payload={"plan": plan_id})
    await cl.Message(content=f"Added {plural(entry['count'], 'link')} to {code_span(plan.rel_path)}. The note's "
                             f"previous text is kept in {code_span(_shown(backup))}. {imported}",
                     author="mindnet", actions=[undo]).send()


@cl.action_callback("suggest_undo")
@readable
async def on_undo(action: cl.Action) -> None:
    entry = _session(PLANS).get(str(action.payload.get("plan")))
    if entry is None or entry["backup"] is None:
        await say_error("Not undone", "there is nothing to undo (undone already)" if entry else GONE)
        return
    plan: EdgePlan = entry["plan"]
    backup: Path = entry["backup"]
    root = Path(get_mindnet().settings.vault_root)
    try:
        undone = await asyncio.to_thread(undo_plan, plan, backup, root)
    except NoteChangedError:
        await say_error("Not undone", f"{plan.rel_path} changed since the links were added (edited in another "
                                      f"program?), so nothing was written: undoing would lose that change. Its "
                                      f"text before the links is still in {_shown(backup)}.")
        return
    except VaultError as exc:
        await say_error("Not undone", str(exc))
        return
    entry["backup"] = None
    _session(PLANS).pop(str(action.payload.get("plan")), None)
    await action.remove()
    imported = await _reimport()
    await cl.Message(content=f"Undone: {code_span(plan.rel_path)} has its text from before the links again (the "
                             f"undone version is kept in {code_span(_shown(undone))}). {imported}",
                     author="mindnet").send()
