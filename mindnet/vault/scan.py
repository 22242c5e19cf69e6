"""Find and read every note of a vault; bad files become report issues, never an aborted import."""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from fnmatch import translate as fnmatch_translate
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
    kind: str = "file"  # "file": found reading the file; "link": found resolving its links (derived again
                        # whenever its links are, not only when the file changes)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.level}: {where}: {self.message}"


def _is_excluded(rel: str, exclude: list[str]) -> bool:
    return any(fnmatch(rel, pattern) for pattern in exclude)


def _link_problem(path: Path, real_root: Path) -> str | None:
    """Why a symlink below the vault is not followed, or None when it points at a file inside the vault."""
    try:
        target = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop (the link points back at itself through other links); not read"
        return f"broken symlink ({exc.strerror or exc}); not read"
    if not target.is_relative_to(real_root):
        return "links to a place outside the vault; not read (fix: move the target into the vault)"
    return None


def _kind_of(mode: int) -> str:
    kinds = [(stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def iter_markdown_files(root: Path, exclude: list[str], issues: list[Issue] | None = None) -> Iterator[Path]:
    """All *.md below root (see `iter_markdown_stats`)."""
    return (path for path, _ in iter_markdown_stats(root, exclude, issues))


def iter_markdown_stats(root: Path, exclude: list[str], issues: list[Issue] | None = None
                        ) -> Iterator[tuple[Path, os.stat_result]]:
    """All *.md below root with their stat (see `walk_markdown`)."""
    return ((Path(path), info) for _, path, info in walk_markdown(root, exclude, issues))


def _excluder(exclude: list[str]) -> Callable[[str], bool]:
    """`_is_excluded` with the globs compiled once into one pattern (a scan asks it for every file)."""
    if not exclude:
        return lambda rel: False
    match = re.compile("|".join(fnmatch_translate(pattern) for pattern in exclude)).match
    return lambda rel: match(rel) is not None


def walk_markdown(root: Path, exclude: list[str], issues: list[Issue] | None = None
                  ) -> Iterator[tuple[str, str, os.stat_result]]:
    """All *.md below root as (path relative to root in POSIX form, path, stat), sorted (a folder's files before
    its subfolders), skipping hidden folders/files and excluded globs. Only regular files inside the vault are
    yielded; every other thing named *.md (a FIFO, a symlink loop, a link out of the vault) and every folder that
    cannot be listed becomes one issue in `issues`. Symlinked folders are not followed (a link out of the vault is
    reported). No `Path` per file: an unchanged re-import of 30,000 notes stats them all."""
    issues = issues if issues is not None else []
    excluded = _excluder(exclude)
    real_root = root.resolve()
    stack = [(str(root), ".")]
    while stack:
        folder, rel_dir = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            issues.append(Issue("error", f"{rel_dir}/", f"cannot read folder ({exc.strerror or exc}); the notes "
                                "in it were not read and their indexed versions are kept (fix: check its "
                                "permissions)"))
            continue
        subfolders: list[tuple[str, str]] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
            is_note = entry.name.lower().endswith(".md")
            if excluded(rel if is_note else rel + "/"):
                continue
            try:
                if entry.is_symlink():
                    path = Path(entry.path)
                    problem = _link_problem(path, real_root)
                    if problem is not None:
                        if is_note or entry.is_dir():
                            issues.append(Issue("error" if is_note else "warning", rel, problem))
                        continue
                    if not is_note:
                        # a folder linked from inside the vault: its notes are read where they are; a link to a
                        # folder that holds it would be an endless path for any tool that follows it
                        target = Path(os.path.realpath(path))
                        if Path(os.path.realpath(folder)).is_relative_to(target):
                            issues.append(Issue("warning", rel, f"folder symlink loop (links to "
                                                f"{target.relative_to(real_root).as_posix() or '.'}/, which holds "
                                                f"it); not followed, the notes there are read once where they are"))
                        continue
                if entry.is_dir(follow_symlinks=False):
                    subfolders.append((entry.path, rel))
                    continue
                if not is_note:
                    continue
                info = entry.stat()
                mode = info.st_mode
            except OSError as exc:
                issues.append(Issue("error", rel, f"cannot be inspected ({exc.strerror or exc}); not read"))
                continue
            if not stat.S_ISREG(mode):
                # reading a FIFO would wait forever, and a device never ends
                issues.append(Issue("error", rel, f"is {_kind_of(mode)}, not a regular file; not read"))
                continue
            yield rel, entry.path, info
        stack.extend(reversed(subfolders))


def stat_notes(root: Path, exclude: list[str]) -> tuple[dict[str, tuple[str, os.stat_result]], list[Issue]]:
    """Every note below root by its vault path (NFC: how the index names it) -> (its path, its stat), in
    `walk_markdown`'s order, and an issue for each thing that cannot be read."""
    issues: list[Issue] = []
    files = {unicodedata.normalize("NFC", rel): (path, info)
             for rel, path, info in walk_markdown(root, exclude, issues)}
    return files, issues


def _issue_from(exc: VaultError, level: str = "error") -> Issue:
    msg = str(exc)
    prefix = f"{exc.path}:{exc.line}: " if exc.line is not None else f"{exc.path}: "
    return Issue(level, exc.path or "", msg.removeprefix(prefix), exc.line)


def load_note(root: Path, path: Path, types: TypesConfig) -> tuple[Note | None, list[Issue]]:
    """One file as a note and its warnings, or None and the error that kept it out."""
    rel = path.relative_to(root).as_posix()
    try:
        note = read_note(root, path, types)
    except VaultError as exc:
        return None, [_issue_from(exc)]
    except OSError as exc:
        return None, [Issue("error", rel, f"cannot read file: {exc}")]
    except RecursionError:   # structure nested thousands deep: a report line, not a stack-long traceback
        return None, [Issue("error", rel, "is nested too deeply to be read (fix: flatten its nested lists or quotes)")]
    except Exception as exc:  # noqa: BLE001 - one unreadable note must never abort the import of the rest
        log.exception("unexpected error reading %s", path)
        return None, [Issue("error", rel, f"cannot be read ({type(exc).__name__}: {exc}); please report this file")]
    problems = [_issue_from(note.frontmatter_error, "warning")] if note.frontmatter_error is not None else []
    problems += [Issue("warning", note.path, w) for w in note.warnings]
    problems += [Issue("warning", note.path, w, line) for line, w in note.warnings_at]
    return note, problems


def scan_vault(root: Path, types: TypesConfig, *, owners: dict[str, str] | None = None,
               on_note: Callable[[Note], None] | None = None,
               reader: Callable[[Iterator[Path]], Iterator[tuple[Note | None, list[Issue]]]] | None = None
               ) -> tuple[list[Note], list[Issue]]:
    """Read the whole vault. Returns the good notes and one issue per problem (unreadable file, duplicate id);
    `on_note(note)` as each note is read (a note a later duplicate replaces included). `reader` turns the
    vault's paths into what `load_note` gives for each, in their order (the import reads a large vault in
    worker processes).

    Of two files with the same id, the one `owners` (note id -> path, from the index) already holds keeps it,
    so a copied note cannot push the indexed one out; without an owner the first by path keeps it."""
    if not root.is_dir():
        raise VaultError("vault folder does not exist", path=str(root),
                         hint="pass the vault path or set MINDNET_VAULT_ROOT")
    notes: list[Note] = []
    issues: list[Issue] = []
    by_id: dict[str, Note] = {}
    paths = iter_markdown_files(root, types.exclude, issues)
    loaded = reader(paths) if reader is not None else (load_note(root, path, types) for path in paths)
    for note, problems in loaded:
        if note is None:
            issues.extend(problems)
            continue
        if note.note_id in by_id:
            kept, skipped = by_id[note.note_id], note
            if (owners or {}).get(note.note_id) == note.path:
                kept, skipped = note, kept
                notes[notes.index(skipped)] = kept
                by_id[note.note_id] = kept
                if on_note is not None:
                    on_note(kept)
            issues.append(Issue(
                "error", skipped.path,
                f"duplicate id '{note.note_id}' (already used by {kept.path}); this file was skipped "
                f"(fix: give one of them another 'id' in its frontmatter)", 1))
            continue
        by_id[note.note_id] = note
        issues.extend(problems)
        notes.append(note)
        if on_note is not None:
            on_note(note)
    return notes, issues
