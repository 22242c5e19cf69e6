"""A draft meets a note of the same name in the vault: the diff the editor shows, the plain sentences, and the
choices (Replace, Merge, a new name, Cancel) as chat actions.

Wiring and rendering only: the save itself is `Mindnet.asave_draft` (with `overwrite` or `merge`, and `replaces`:
the version of the note the diff was made from, so a note changed since is refused), which keeps a backup under
`<vault>/.mindnet/backups/`. The diff rows are plain text; the `DraftEditor` element shows them as text, never as
Markdown.
"""

from __future__ import annotations

import difflib
from typing import Any

import chainlit as cl

from mindnet.errors import DraftConflictError

MAX_DIFF_ROWS = 400      # a longer diff is cut (the editor says so); both texts stay available in full


def diff_rows(existing: str | None, draft: str | None) -> list[dict[str, str]]:
    """The unified diff from the note in the vault to the draft as rows `{"op": " "|"-"|"+"|"@", "text": ...}`
    (no file header lines); empty when the note is gone or nothing differs."""
    if existing is None or draft is None:
        return []
    rows: list[dict[str, str]] = []
    lines = difflib.unified_diff(existing.splitlines(), draft.splitlines(), lineterm="", n=2)
    for line in lines:
        if line.startswith(("---", "+++")) and not rows:
            continue
        op = "@" if line.startswith("@@") else (line[:1] or " ")
        text = "…" if op == "@" else line[1:]
        rows.append({"op": op if op in " -+@" else " ", "text": text})
        if len(rows) >= MAX_DIFF_ROWS:
            rows.append({"op": "@", "text": f"… (the diff is longer; shown: its first {MAX_DIFF_ROWS} lines)"})
            break
    return rows


def conflict_props(conflict: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the editor shows of a conflict: path, reason, both texts, the version and the diff rows."""
    if not conflict:
        return None
    shown = {k: conflict.get(k) for k in ("path", "reason", "existing", "version")}
    shown["diff"] = diff_rows(conflict.get("existing"), conflict.get("draft"))
    return shown


def conflict_sentence(exc: DraftConflictError) -> str:
    """What is wrong, in words for the person at the keyboard (the API's hints name request fields)."""
    conflict = exc.conflict or {}
    path = conflict.get("path") or exc.path or "the note"
    if not conflict:                  # the id belongs to another note
        return f"{exc.message}. To fix it: {exc.hint}." if exc.hint else f"{exc.message}."
    if conflict.get("version") is None:
        return (f"The note {path} is gone from the vault (deleted or moved) since it was shown; nothing was "
                "written. Save your draft as a new note, or cancel.")
    if conflict.get("reason") == "changed":
        return (f"The note {path} changed since it was shown; nothing was written. The editor above now shows "
                "what would change against its current text: choose again.")
    return f"A note with this name is already in the vault: {path}. The editor above shows what would change."


CHOICES = ("Replace it (its current text is kept as a backup), add your draft's text below the note, save under a "
           "new name, or cancel and keep editing?")
OTHER_CHOICES = "Save your draft, save it under a new name, or cancel?"


def conflict_actions(draft_id: str, conflict: dict[str, Any] | None) -> list[cl.Action]:
    """Replace / Merge (only for the version shown), or Save when the note is gone; a new name; Cancel."""
    base = {"draft_id": draft_id}
    conflict = conflict or {}
    actions = []
    version = conflict.get("version")
    if version:
        actions += [
            cl.Action(name="draft_save", label="Replace (a backup is kept)", icon="file-pen-line",
                      tooltip="replace the note with your draft; its current text is kept as a backup",
                      payload={**base, "overwrite": True, "replaces": version}),
            cl.Action(name="draft_save", label="Merge: append the new text", icon="list-plus",
                      tooltip="keep the note as it is and add your draft's text below it (a backup is kept)",
                      payload={**base, "merge": True, "replaces": version}),
        ]
    elif conflict:       # the note is gone since: save the draft where it was
        actions.append(cl.Action(name="draft_save", label="Save", icon="save", tooltip="save the draft as a new note",
                                 payload=base))
    actions += [cl.Action(name="draft_save", label="Save as new name", icon="copy-plus",
                          tooltip="save as 'Title (2)' beside the existing note", payload={**base, "new_name": True}),
                cl.Action(name="draft_cancel", label="Cancel / keep editing", icon="x",
                          tooltip="nothing is saved; the draft stays open", payload=base)]
    return actions
