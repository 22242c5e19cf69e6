"""Find and read every note of a vault; bad files become report issues, never an aborted import."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from mindnet.errors import VaultError
from mindnet.settings import TypesConfig
from mindnet.vault.note import Note, read_note

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Issue:
    """One line of the import report: which file, where, what, how to fix."""

    level: str          # "error" (file skipped) or "warning" (imported anyway)
    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.level}: {where}: {self.message}"


def iter_markdown_files(root: Path, exclude: list[str]) -> Iterator[Path]:
    """All *.md below root, sorted, skipping hidden folders/files and excluded globs."""
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            if name.startswith(".") or not name.lower().endswith(".md"):
                continue
            if not (Path(dirpath) / name).resolve().is_relative_to(real_root):
                log.warning("skipping %s: it links to a file outside the vault", Path(dirpath) / name)
                continue  # a symlink to /etc/passwd must not end up in the index
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if any(fnmatch(rel, pattern) for pattern in exclude):
                continue
            yield Path(dirpath) / name


def _issue_from(exc: VaultError, level: str = "error") -> Issue:
    msg = str(exc)
    prefix = f"{exc.path}:{exc.line}: " if exc.line is not None else f"{exc.path}: "
    return Issue(level, exc.path or "", msg.removeprefix(prefix), exc.line)


def scan_vault(root: Path, types: TypesConfig, *, owners: dict[str, str] | None = None
               ) -> tuple[list[Note], list[Issue]]:
    """Read the whole vault. Returns the good notes and one issue per problem (unreadable file, duplicate id).

    Of two files with the same id, the one `owners` (note id -> path, from the index) already holds keeps it,
    so a copied note cannot push the indexed one out; without an owner the first by path keeps it."""
    if not root.is_dir():
        raise VaultError("vault folder does not exist", path=str(root),
                         hint="pass the vault path or set MINDNET_VAULT_ROOT")
    notes: list[Note] = []
    issues: list[Issue] = []
    by_id: dict[str, Note] = {}
    for path in iter_markdown_files(root, types.exclude):
        try:
            note = read_note(root, path, types)
        except VaultError as exc:
            issues.append(_issue_from(exc))
            continue
        except OSError as exc:
            issues.append(Issue("error", path.relative_to(root).as_posix(), f"cannot read file: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - one unreadable note must never abort the import of the rest
            log.exception("unexpected error reading %s", path)
            issues.append(Issue("error", path.relative_to(root).as_posix(),
                                f"cannot be read ({type(exc).__name__}: {exc}); please report this file"))
            continue
        if note.note_id in by_id:
            kept, skipped = by_id[note.note_id], note
            if (owners or {}).get(note.note_id) == note.path:
                kept, skipped = note, kept
                notes[notes.index(skipped)] = kept
                by_id[note.note_id] = kept
            issues.append(Issue(
                "error", skipped.path,
                f"duplicate id '{note.note_id}' (already used by {kept.path}); this file was skipped "
                f"(fix: give one of them another 'id' in its frontmatter)", 1))
            continue
        by_id[note.note_id] = note
        issues.extend(Issue("warning", note.path, w) for w in note.warnings)
        notes.append(note)
    return notes, issues
