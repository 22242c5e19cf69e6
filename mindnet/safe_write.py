"""Writing notes into the vault so that the user's text is never lost without a trace.

- `create(path, content)`: a new note, whole or not at all. The text goes to a hidden temp file in the note's folder,
  is flushed to disk and then linked to its name, which fails when the name exists (no check-then-write race). On
  any failure (disk full, file too large, permissions) the temp file is removed: a retry never finds an empty or
  half-written note in its way.
- `replace(path, content, expected=VERSION)`: an existing note, only while it still is the version the caller showed
  or planned on (`version_of`: the SHA-256 of its bytes). Under the vault's write lock (`<vault>/.mindnet/write.lock`:
  one mindnet writer at a time, across processes) the note is compared, the new text written beside it and swapped
  in by one atomic exchange (Linux `renameat2(RENAME_EXCHANGE)`, macOS `renamex_np(RENAME_SWAP)`). What the exchange
  took out is compared again: an editor's save that landed in between is swapped back and the write refused;
  otherwise the replaced file itself becomes the backup under `<vault>/.mindnet/backups/<note path>.<time>.bak` (an
  editor still writing into it in place writes into the backup). Without an exchange (Windows, some network file
  systems) the backup is a copy and the note is compared once more right before `os.replace`: a window of
  microseconds instead of none.

Failures are `VaultWriteError` (nothing written, nothing left behind) and `NoteChangedError` (nothing written).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from mindnet.errors import NoteChangedError, VaultWriteError
from mindnet.fs_exchange import exchange_function as _exchange_function

log = logging.getLogger(__name__)

STATE_DIR = ".mindnet"                 # hidden: Obsidian and the import skip it
BACKUP_DIR = f"{STATE_DIR}/backups"
LOCK_FILE = f"{STATE_DIR}/write.lock"
LOCK_TIMEOUT_S = 30.0
TEMP_PREFIX = ".mindnet-"
_NO_EXCHANGE = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV}
_in_process = threading.Lock()        # threads of one process take turns too (the file lock is per process)


def version_of(data: bytes) -> str:
    """The version of a note's bytes: its SHA-256, hex."""
    return hashlib.sha256(data).hexdigest()


def read_note(path: Path) -> bytes | None:
    """The note's bytes, None when there is no such file."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


def shown_path(root: Path, path: Path) -> str:
    """`path` as messages show it: vault-relative, never the server's absolute path."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).name


def write_error(exc: OSError, shown: str) -> VaultWriteError:
    """The OS error of a failed write as one sentence with its fix."""
    code = exc.errno
    reason = exc.strerror or str(exc)
    if code in (errno.ENOSPC, errno.EDQUOT):
        message, hint = f"the vault's disk is full ({reason})", "free some space on the vault's disk, then save again"
    elif code == errno.EFBIG:
        message, hint = (f"the file system refused a file this large ({reason})",
                         "shorten the note, or raise this process's file size limit (ulimit -f)")
    elif code == errno.EROFS:
        message, hint = f"the vault is on a read-only file system ({reason})", "mount it writable, then save again"
    elif code in (errno.EACCES, errno.EPERM):
        message, hint = f"no permission to write here ({reason})", "give your user write access to the folder"
    else:
        message, hint = f"cannot write the note ({reason})", "check the vault's disk, then save again"
    return VaultWriteError(f"{message}; nothing was written", path=shown, hint=hint, errno=code)


# --------------------------------------------------------------------------- creating a note


def create(path: Path, content: bytes, *, root: Path) -> None:
    """Write a new note at `path`, whole or not at all; raises FileExistsError when the name is taken and
    VaultWriteError when the write fails (then nothing is left behind)."""
    path = Path(path)
    shown = shown_path(root, path)
    try:
        tmp = _write_temp(path.parent, content, 0o666 & ~_umask())
    except OSError as exc:
        raise write_error(exc, shown) from exc
    try:
        try:
            os.link(tmp, path)             # atomic, and never over an existing file
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
                raise write_error(exc, shown) from exc
            _create_exclusive(path, content, shown)     # a file system without hard links
        _sync_folder(path.parent)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _create_exclusive(path: Path, content: bytes, shown: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except FileExistsError:
        raise
    except OSError as exc:
        raise write_error(exc, shown) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)       # ours: created exclusively a moment ago
        raise write_error(exc, shown) from exc


# --------------------------------------------------------------------------- replacing a note


def replace(path: Path, content: bytes, *, expected: str, root: Path, hint: str | None = None) -> Path:
    """Replace the note at `path` with `content` if it still has the version `expected`; returns the backup of the
    replaced text. Raises NoteChangedError (it changed or is gone; nothing written, `hint` says what to do) or
    VaultWriteError (nothing written)."""
    path, root = Path(path), Path(root)
    shown = shown_path(root, path)
    with vault_lock(root, shown):
        current = read_note(path)
        if current is None or version_of(current) != expected:
            raise _changed(shown, expected, current, hint)
        try:
            tmp = _write_temp(path.parent, content, path.stat().st_mode & 0o777)
        except OSError as exc:
            raise write_error(exc, shown) from exc
        try:
            try:
                backups = _backup_folder(root, shown)
            except OSError as exc:
                raise write_error(exc, shown) from exc
            # again, right before the swap (writing the temp file took a while): a save meanwhile is never exposed
            current = read_note(path)
            if current is None or version_of(current) != expected:
                raise _changed(shown, expected, current, hint)
            return _swap_in(path, tmp, content, expected, current, backups, shown, hint)
        finally:
            _discard_own(tmp, content)


@contextmanager
def vault_lock(root: Path, shown: str = "") -> Iterator[None]:
    """One mindnet writer at a time in this vault, across threads and processes."""
    folder = Path(root) / STATE_DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise write_error(exc, shown or STATE_DIR) from exc
    lock = FileLock(str(folder / "write.lock"), timeout=LOCK_TIMEOUT_S)
    if not _in_process.acquire(timeout=LOCK_TIMEOUT_S):
        raise _busy(shown)
    try:
        try:
            lock.acquire()
        except Timeout as exc:
            raise _busy(shown) from exc
        try:
            yield
        finally:
            lock.release()
    finally:
        _in_process.release()


def _busy(shown: str) -> VaultWriteError:
    return VaultWriteError(f"another mindnet process has been writing into the vault for {LOCK_TIMEOUT_S:.0f} s "
                           f"({LOCK_FILE}); nothing was written", path=shown or None,
                           hint="wait for it (mindnet serve or suggest --apply) to finish, then try again")


def _changed(shown: str, expected: str, current: bytes | None, hint: str | None) -> NoteChangedError:
    what = "is gone (deleted or moved)" if current is None else "changed"
    return NoteChangedError(f"the note {what} since it was read; nothing was written", path=shown,
                            hint=hint or "read it again and redo the change", expected=expected, current=current,
                            version=None if current is None else version_of(current))


def _swap_in(path: Path, tmp: Path, content: bytes, expected: str, current: bytes, backups: Path, shown: str,
             hint: str | None) -> Path:
    exchange = _exchange_function()
    if exchange is not None:
        try:
            exchange(tmp, path)
        except FileNotFoundError:           # the note was deleted or moved a moment ago
            raise _changed(shown, expected, None, hint) from None
        except OSError as exc:
            if exc.errno not in _NO_EXCHANGE:
                raise write_error(exc, shown) from exc
        else:
            return _keep_replaced(exchange, path, tmp, expected, backups, shown)
    return _replace_checked(path, tmp, expected, current, backups, shown, hint)


def _keep_replaced(exchange: Callable[[Path, Path], None], path: Path, tmp: Path, expected: str, backups: Path,
                   shown: str) -> Path:
    """`tmp` holds what the exchange took out of the note: it becomes the backup, whatever it is. Normally the text
    compared a moment ago; a save by another program in the microseconds since (or an editor still writing into the
    file in place) is kept there too, never dropped."""
    try:
        backup = _keep(tmp, backups, shown)
    except OSError as exc:                 # no backup, no write: the old text goes back
        exchange(tmp, path)
        raise write_error(exc, shown) from exc
    if version_of(backup.read_bytes()) != expected:
        log.warning("another program saved %s while mindnet replaced it; that text is kept in %s", shown, backup)
    return backup


def _discard_own(tmp: Path, content: bytes) -> None:
    """Remove the temp file if it (still or again) holds our own bytes; anything else there is someone's text."""
    data = read_note(tmp)
    if data is None:
        return
    if data == content:
        tmp.unlink(missing_ok=True)
    else:
        log.warning("kept %s: it holds a version of the note that could not be put back", tmp)


def _replace_checked(path: Path, tmp: Path, expected: str, current: bytes, backups: Path, shown: str,
                     hint: str | None) -> Path:
    """Without an atomic exchange: a copy as the backup, the note compared again right before the rename."""
    try:
        backup = _new_backup(backups, shown, lambda name: _create_copy(name, current))
    except OSError as exc:
        raise write_error(exc, shown) from exc
    now = read_note(path)
    if now is None or version_of(now) != expected:
        backup.unlink(missing_ok=True)
        raise _changed(shown, expected, now, hint)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        backup.unlink(missing_ok=True)
        raise write_error(exc, shown) from exc
    return backup


# --------------------------------------------------------------------------- backups


def backup_name(shown: str, stamp: str | None = None, n: int = 1) -> str:
    """`<note path>.<YYYYmmdd-HHMMSS>.bak` (`-2`, `-3`, ... for a second backup in the same second), under
    BACKUP_DIR."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    return f"{shown}.{stamp}{'' if n == 1 else f'-{n}'}.bak"


def _backup_folder(root: Path, shown: str) -> Path:
    folder = (Path(root) / BACKUP_DIR / shown).parent
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _keep(file: Path, backups: Path, shown: str) -> Path:
    """Move `file` (the replaced note) into the backups under a new name; never over another backup."""
    def link(target: Path) -> None:
        try:
            os.link(file, target)
        except FileExistsError:
            raise
        except OSError as exc:      # no hard links here: a copy
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS,
                                 errno.EXDEV):
                raise
            _create_copy(target, file.read_bytes())
    backup = _new_backup(backups, shown, link)
    file.unlink()
    return backup


def _new_backup(backups: Path, shown: str, make: Callable[[Path], None]) -> Path:
    """The first free backup name of the note `shown` in `backups`, made by `make` (which must not overwrite)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 10_000):
        target = backups / Path(backup_name(shown, stamp, n)).name
        try:
            make(target)
        except FileExistsError:
            continue
        return target
    raise FileExistsError(errno.EEXIST, "no free backup name", str(backups))


def _create_copy(target: Path, data: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        target.unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- files and the OS


def _write_temp(folder: Path, content: bytes, mode: int) -> Path:
    """`content` in a new hidden file of `folder`, on disk (fsync) and with `mode`; removed again on failure."""
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=folder)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _sync_folder(folder: Path) -> None:
    """The new name on disk too (POSIX); best effort."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
