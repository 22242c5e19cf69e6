"""Saving interview drafts into the vault: never outside it, never over an existing note by accident, never
over a newer text than the one the user chose to replace, always with a backup of what was replaced."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from mindnet import safe_write
from mindnet.chat.sanitizer import NoteDraft
from mindnet.errors import DraftConflictError, DraftError, NoteChangedError

logger = logging.getLogger(__name__)

_ILLEGAL = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')  # illegal on Windows/macOS or in Obsidian links
# bidi controls (U+202E shows "gpj.md" as "dm.jpg"): never in a file name
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Windows device names, reserved with any extension ("con.txt.md" too), COM0/LPT0 and the superscript digits
_RESERVED = {"con", "prn", "aux", "nul", "conin$", "conout$",
             *(f"{dev}{i}" for dev in ("com", "lpt") for i in (*"0123456789", "\u00b9", "\u00b2", "\u00b3"))}
_MAX_NAME_BYTES = 200  # file systems allow 255; leave room for ".md" and editor suffixes


def _traversal_problem(value: str, *, drives: bool) -> str | None:
    """Why `value` would leave its folder ('..' part, absolute path), or None when it is harmless."""
    if not value:
        return None
    # drive letters only count for folders: a title may well start with "A: ..."
    if value.startswith(("/", "\\")) or PurePosixPath(value).is_absolute() or \
            (drives and PureWindowsPath(value).drive):
        return "is an absolute path"
    parts = re.split(r"[/\\]", value)
    if any(p.strip() == ".." for p in parts):
        return "contains a '..' path part"
    return None


def draft_filename(title: str, fallback: str) -> str:
    """File name (with .md) for a note title: illegal characters replaced, length capped."""
    name = _BIDI.sub("", unicodedata.normalize("NFC", title))
    name = name.replace(":", " - ")   # "Projekt: Garten" -> "Projekt - Garten" (spaces are collapsed below)
    name = _ILLEGAL.sub("-", name)
    name = re.sub(r"\s+", " ", name).strip(" .-")  # leading dots would hide the file
    if len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        # cut, with a short hash of the whole title: two long titles that share their start stay two files
        tag = " " + hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
        name = name[:_MAX_NAME_BYTES]   # no more characters than bytes allowed: the loop below stays short
        while len(name.encode("utf-8")) > _MAX_NAME_BYTES - len(tag):
            name = name[:-1]
        name = name.rstrip(" .-") + tag
    if not name:
        name = fallback
    stem, dot, rest = name.partition(".")
    if stem.rstrip(" ").casefold() in _RESERVED:
        name = f"{stem}_{dot}{rest}"       # "con.txt" -> "con_.txt": the device name with any extension
    return f"{name}.md"


def _twin(folder: Path, name: str) -> Path | None:
    """An existing file in `folder` whose name equals `name` up to Unicode normalisation (NFC/NFD) and case:
    the same note on macOS, Windows and in sync tools, so a draft must meet it as a conflict, not beside it."""
    key = unicodedata.normalize("NFC", name).casefold()
    try:
        with os.scandir(folder) as entries:
            return next((Path(e.path) for e in entries
                         if e.name != name and unicodedata.normalize("NFC", e.name).casefold() == key), None)
    except OSError:
        return None


@dataclass(frozen=True)
class SavedNote:
    """Where a draft was saved, the backup of the note it replaced (None for a new note), its version."""

    path: Path
    backup: Path | None
    version: str


def save_draft(draft: NoteDraft, *, vault_root: Path, folder: str | None, overwrite: bool = False,
               replaces: str | None = None, max_bytes: int | None = None, merge: bool = False) -> SavedNote:
    """Write `draft` to vault_root/folder/<title>.md; raises DraftError when unsafe (or larger than `max_bytes`, the
    import's own file limit), DraftConflictError when a note is in the way and VaultWriteError when the write fails
    (nothing is left behind).

    A new file is created whole or not at all. An existing one is replaced only with `overwrite` and `replaces`,
    the version (`mindnet.safe_write.version_of`) of the note as the user saw it in the conflict; a note that
    changed since is refused, and the replaced text is kept under `<vault>/.mindnet/backups/`. With `merge` (and
    `replaces`) the note stays whole and the draft's body is appended below it (`merged_note`), also with a backup."""
    root = Path(vault_root)
    if not root.is_dir():
        raise DraftError("vault folder does not exist", path=root.name,
                         hint="set MINDNET_VAULT_ROOT to an existing folder")
    root = root.resolve()
    for what, value in (("folder", folder or ""), ("title", draft.title)):
        problem = _traversal_problem(value, drives=what == "folder")
        if problem:
            raise DraftError(f"draft {what} {value!r} {problem}; notes are only saved inside the vault",
                             path=folder or "", hint=f"use a {what} without '..' or a leading '/'")

    target_dir = _inside(root, root / (folder or ""), folder or "")
    if target_dir.exists() and not target_dir.is_dir():
        raise DraftError("draft folder is a file, not a folder", path=_shown(root, target_dir),
                         hint="choose another folder for this note type in config/types.yaml")
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise safe_write.write_error(exc, _shown(root, target_dir)) from exc
    target_dir = _inside(root, target_dir, folder or "")  # again: a symlink may have appeared meanwhile

    name = draft_filename(draft.title, fallback=draft.note_id)
    path = _twin(target_dir, name) or target_dir / name
    if path.is_symlink():
        raise DraftError("a symlink is in the way of the draft", path=_shown(root, path),
                         hint="remove the symlink or rename the note")
    content = shown = draft.to_markdown().encode("utf-8")
    if merge:
        content, overwrite = _merged(root, path, draft, shown, replaces), True
    if max_bytes is not None and len(content) > max_bytes:
        raise DraftError(f"the draft is {len(content)} bytes, over the import's limit of {max_bytes}",
                         path=_shown(root, path), hint="shorten the note (or raise max_file_bytes in types.yaml)")
    backup = None
    if overwrite and (replaces is not None or path.exists()):
        backup = _replace(root, path, content, replaces, shown)
    else:
        try:
            safe_write.create(path, content, root=root)
        except FileExistsError:
            raise _conflict(root, path, content, safe_write.read_note(path), "exists",
                            "a note with this file name already exists",
                            "overwrite it (with the version in this answer: the note as you saw it), save under a "
                            "new name, or change the note's title") from None
    logger.info("saved draft %s (%s) to %s%s", draft.note_id, draft.note_type, path,
                f", the replaced text kept in {backup}" if backup else "")
    return SavedNote(path=path, backup=backup, version=safe_write.version_of(content))


def merged_note(existing: bytes, draft: NoteDraft) -> bytes:
    """The note as it is, a blank line, then the draft's body (without a first heading that only repeats the
    title), in the note's own line endings."""
    body = draft.body.strip("\n")
    first, _, rest = body.partition("\n")
    if first.startswith("# ") and first[2:].strip() == draft.title.strip():
        body = rest.strip("\n")
    if not body.strip():
        raise DraftError("the draft has no text below its frontmatter to add to the note",
                         hint="write the text to add, or replace the note instead")
    nl = b"\r\n" if b"\r\n" in existing else b"\n"
    return existing.rstrip(b"\r\n") + nl + nl + body.encode("utf-8").replace(b"\n", nl) + nl


def _merged(root: Path, path: Path, draft: NoteDraft, shown: bytes, replaces: str | None) -> bytes:
    existing = safe_write.read_note(path)
    if existing is None:
        raise _conflict(root, path, shown, None, "changed",
                        "there is no note at this path to add to (deleted or moved since it was shown); "
                        "nothing was written", "save it as a new note")
    return merged_note(existing, draft)


def _replace(root: Path, path: Path, content: bytes, replaces: str | None, shown: bytes | None = None) -> Path:
    shown = content if shown is None else shown      # the draft as the conflict shows it (not the merged note)
    if replaces is None:
        raise _conflict(root, path, shown, safe_write.read_note(path), "version needed",
                        "an overwrite must name the version of the note it replaces; nothing was written",
                        "send 'replaces' with the version in this answer (the note as you saw it)")
    try:
        return safe_write.replace(path, content, expected=replaces, root=root)
    except NoteChangedError as exc:
        gone = exc.current is None
        raise _conflict(root, path, shown, exc.current, "changed",
                        "there is no note at this path to replace (deleted or moved since it was shown, or the "
                        "draft's title changed); nothing was written" if gone else
                        "the note changed since it was shown; nothing was written",
                        "save it as a new note" if gone else "compare both texts, then overwrite with the version "
                        "in this answer or save under a new name") from exc


def _conflict(root: Path, path: Path, content: bytes, existing: bytes | None, reason: str, message: str,
              hint: str) -> DraftConflictError:
    """A conflict with both texts: the file's as it is now (None: gone) with its version, and the draft's."""
    conflict = {"reason": reason, "path": _shown(root, path),
                "version": None if existing is None else safe_write.version_of(existing),
                "existing": None if existing is None else existing.decode("utf-8", errors="replace"),
                "draft": content.decode("utf-8")}
    return DraftConflictError(message, path=_shown(root, path), hint=hint, conflict=conflict)


def _inside(root: Path, candidate: Path, shown: str) -> Path:
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise DraftError(f"draft folder {shown!r} leads outside the vault (through a symlink)",
                         path=shown, hint="the folder (or a symlink in it) must stay inside the vault")
    return resolved


def _shown(root: Path, path: Path) -> str:
    """`path` as error messages show it: relative to the vault, never the server's absolute path."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return Path(path).name


def renamed(draft: NoteDraft, *, vault_root: Path, folder: str | None) -> NoteDraft:
    """The draft under the first free title "T (2)", "T (3)", ... of its folder, with a fresh id
    ("save as new name" when a note of that name exists already)."""
    from mindnet.chat.sanitizer import make_note_id
    target = Path(vault_root) / (folder or "")
    n = 2
    while (target / draft_filename(f"{draft.title} ({n})", fallback=draft.note_id)).exists():
        n += 1
    title = f"{draft.title} ({n})"
    note_id = make_note_id(title, str(draft.frontmatter.get("created") or ""))
    meta = {**draft.frontmatter, "title": title, "id": note_id}
    return draft.model_copy(update={"frontmatter": meta, "title": title, "note_id": note_id})
