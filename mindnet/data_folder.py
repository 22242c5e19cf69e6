"""The data folder (index, cache, logs, conversations): private, and a failed write names its file.

The data folder is private: it holds every note's text (the index, the embedding cache, the search history,
the conversations, Chainlit's uploads). Its folders are created 0700 and mindnet's own files 0600, whatever the
umask; files the Qdrant engine creates take the umask but lie inside a 0700 folder, out of other users' reach.
(On Windows the modes are ignored; the user's profile folder protects the data.)"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from mindnet.errors import DataWriteError

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(folder: Path) -> Path:
    """`folder` (and missing parents) created if needed; `folder` itself readable by the owner only."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    _chmod(folder, DIR_MODE)
    return folder


def private_file(path: Path) -> Path:
    """`path` created empty if missing, readable by the owner only (an older version's 0644 file is fixed),
    in a private folder. For files that another library opens afterwards (SQLite, whose journal files take the
    database file's mode)."""
    path = Path(path)
    private_dir(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), FILE_MODE))
    _chmod(path, FILE_MODE)
    return path


def _chmod(path: Path, mode: int) -> None:
    try:
        if path.stat().st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except OSError:         # not the owner, or a file system without modes: the data is still written
        pass


def data_write_error(exc: OSError, path: Path, outcome: str) -> DataWriteError:
    """The OS error of a failed write into the data folder as one sentence with its fix."""
    code = exc.errno
    reason = exc.strerror or str(exc)
    if code in (errno.ENOSPC, errno.EDQUOT):
        problem, fix = "the data folder's disk is full", "free some space on that disk"
    elif code == errno.EROFS:
        problem, fix = "the data folder is on a read-only file system", "mount it writable or set MINDNET_LOG_DIR, " \
                                                                          "MINDNET_CACHE_DIR to a writable folder"
    elif code in (errno.EACCES, errno.EPERM):
        problem, fix = "no permission to write the data folder", "give your user write access to it"
    else:
        problem, fix = "cannot write the data folder", "check its disk"
    return DataWriteError(f"{path}: {problem} ({reason}); {outcome}. Fix: {fix}.", path=str(path), errno=code)


def move_aside(path: Path, companions: tuple[str, ...] = ("-wal", "-shm", "-journal")) -> Path:
    """Rename a damaged file (and its SQLite companions) to `<name>.damaged-<time>` beside it, kept for the
    user to look at, so a fresh one can take its place; returns the new name."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", *companions):
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    return aside


_damage: dict[str, str] = {}     # files found damaged and moved aside in this process: file -> what was done


def report_damage(path: Path, message: str) -> bool:
    """Remember, for /health, that `path` was found damaged and what was done about it; False when this was
    known already."""
    new = _damage.get(str(path)) != message
    _damage[str(path)] = message
    return new


def clear_damage(path: Path) -> None:
    """`path` was written anew: what was wrong with it is gone."""
    _damage.pop(str(path), None)


def damage_reports(folders: list[Path]) -> list[str]:
    """The damage found in files inside `folders` (one process may serve several data folders: tests)."""
    roots = [str(Path(f).resolve()) for f in folders]
    return [m for p, m in _damage.items() if any(str(Path(p).resolve()).startswith(r) for r in roots)]
