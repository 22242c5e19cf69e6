"""Following a vault on disk with `watchfiles`: batches of note changes, debounced.

A batch is yielded once the vault has been quiet for `quiet_ms` (or `max_wait_ms` after its first change),
so an editor's atomic save (temp file, then rename) or a `git checkout` touching 500 files arrives as one
batch, and one import follows it. Changes made while that import runs are kept by watchfiles and come as the
next batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from watchfiles import Change, watch

log = logging.getLogger(__name__)
QUIET_MS = 200       # a save is re-imported 200-400 ms after the last write (watchfiles checks every step)
MAX_WAIT_MS = 10000  # a burst that never pauses is still imported every 10 s


@dataclass(frozen=True)
class ChangeBatch:
    notes: tuple[str, ...]   # vault-relative POSIX paths of notes (or folders) added, modified or deleted
    config: bool             # the types config changed: every note it affects is rebuilt


class VaultFilter:
    """Notes (`*.md`) and folders of the vault outside hidden folders (.obsidian, .trash, .git), and the
    types config file; editors' temp files (`.x.md.swp`, `x.md~`, `x.md.tmp`) are not notes."""

    def __init__(self, vault: Path, types_path: Path) -> None:
        self.vault = vault.resolve()
        self.types_path = types_path.resolve()

    def relative(self, path: str) -> str | None:
        try:
            rel = Path(path).resolve().relative_to(self.vault)
        except ValueError:
            return None
        return rel.as_posix()

    def __call__(self, change: Change, path: str) -> bool:
        if Path(path).resolve() == self.types_path:
            return True
        rel = self.relative(path)
        if rel is None or rel == "." or any(part.startswith(".") for part in rel.split("/")):
            return False
        p = Path(path)
        if p.suffix.lower() == ".md":
            return True
        # a folder moved or deleted as a whole reports only the folder itself
        return p.is_dir() or (change == Change.deleted and not p.suffix)


def watch_vault(vault: Path, types_path: Path, stop: threading.Event, *, quiet_ms: int = QUIET_MS,
                max_wait_ms: int = MAX_WAIT_MS) -> Iterator[ChangeBatch]:
    """Batches of changes under `vault` (and to `types_path`) until `stop` is set."""
    flt = VaultFilter(vault, types_path)
    paths = [vault]
    if flt.relative(str(types_path)) is None:
        # a folder, not the file (an atomic save replaces the file's inode); the real one, not a symlink to it
        paths.append(types_path.resolve().parent)
    for changes in watch(*paths, watch_filter=flt, step=quiet_ms, debounce=max_wait_ms, stop_event=stop,
                         rust_timeout=500, raise_interrupt=False):
        config = any(Path(p).resolve() == flt.types_path for _, p in changes)
        notes = sorted({rel for _, p in changes if (rel := flt.relative(p)) is not None})
        log.debug("vault changes: %s%s", notes[:5], " + types config" if config else "")
        yield ChangeBatch(tuple(notes), config)
