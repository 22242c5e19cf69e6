"""The embedded index folder (MINDNET_QDRANT_PATH, `./data/qdrant` by default) and who holds it.

    <folder>/mindnet.lock          flock'd by the one process that has the folder open (one writer per folder)
    <folder>/mindnet.pid           which process that is: pid, command, start time (for the message a second
                                   process gets: "in use by process 4711 (mindnet serve, started ...)")
    <folder>/mindnet.json          per collection prefix: the import token (`mindnet.indexing.state`), the
                                   chunks' vector size and the vault the index was built from
    <folder>/<prefix>_notes/ ...   one Qdrant Edge shard per collection (`mindnet.store.edge`)
    <folder>/<prefix>.graph.npz    the link graph beside them (`mindnet.retrieval.graph_file`)

The lock is mindnet's own (Qdrant Edge also refuses a second opener of a shard, with a bare "WouldBlock"), so
the folder can be claimed before any shard is opened and the holder is named. A process opens the folder once;
every store of it (several collection prefixes) shares that one claim.

An index written by older mindnet versions (qdrant-client's local mode: `meta.json`, `collection/`) is
recognised (`legacy_files`): the next import rebuilds it as Edge shards from the vault and the embedding cache
and then removes the old files.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from mindnet.data_folder import clear_damage, private_dir, report_damage
from mindnet.errors import StoreError, StoreLockedError

log = logging.getLogger(__name__)
LOCK_FILE = "mindnet.lock"
HOLDER_FILE = "mindnet.pid"
META_FILE = "mindnet.json"
META_FORMAT = 1
# what qdrant-client's local mode (mindnet before Qdrant Edge) left in the folder
LEGACY = ("meta.json", "collection", ".lock")
LEGACY_GLOBS = ("mindnet-*.snapshot.npz", "mindnet-*.start.npz", "mindnet-*.start.payloads")


def holder_text(folder: Path) -> str:
    try:
        info = json.loads((folder / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return "another process (unknown: no mindnet.pid file)"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"process {info.get('pid')} ({info.get('command', '?')}, started {started})"


def held_by_other(folder: Path) -> str | None:
    """Who holds the folder when another live process does (a cheap check: the lock, without taking it)."""
    path = Path(folder) / LOCK_FILE
    if not path.is_file():
        return None
    with _claims_lock:
        if str(Path(folder).resolve()) in _claims:
            return None                       # this process holds it
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return holder_text(Path(folder))
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def missing_index_error(folder: Path, vault: Path | None = None) -> StoreError:
    """A read-only command found no index folder: say where it looked and which vault `mindnet ingest` would
    import into it (a command run from another folder looks in that folder's ./data/qdrant)."""
    how = (f"`mindnet ingest` imports {vault} (MINDNET_VAULT_ROOT) into it, `mindnet ingest VAULT` another vault"
           if vault is not None else "`mindnet ingest [VAULT]`")
    return StoreError(f"no index at {folder}: the folder does not exist. Import your vault first ({how}), or "
                      f"point MINDNET_QDRANT_PATH (or --index) at the index folder")


def locked_error(folder: Path, holder: str) -> StoreLockedError:
    return StoreLockedError(
        f"the index folder {folder} is in use by {holder}. One process at a time opens an embedded index: stop "
        f"that process, use its server (`mindnet serve` offers import and query), or run a Qdrant server and set "
        f"MINDNET_QDRANT_URL")


@dataclass
class _Claim:
    fd: int
    users: int


_claims: dict[str, _Claim] = {}          # resolved folder -> this process's claim
_claims_lock = threading.Lock()


class FolderClaim:
    """This process's hold on an index folder (re-entrant within the process: several stores share it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._key = str(self.folder.resolve())
        self._released = False

    @classmethod
    def take(cls, folder: Path, *, create: bool) -> FolderClaim:
        """Claim `folder` (created with `create`, else it must exist); StoreLockedError names the holder."""
        folder = Path(folder)
        if not folder.is_dir():
            if not create:
                raise missing_index_error(folder)
            private_dir(folder)
        claim = cls(folder)
        with _claims_lock:
            held = _claims.get(claim._key)
            if held is not None:
                held.users += 1
                return claim
            try:
                fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise StoreError(f"cannot open {folder / LOCK_FILE}: {exc.strerror or exc} (fix: check the "
                                 f"folder's permissions and free disk space)") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise locked_error(folder, holder_text(folder)) from exc
                raise StoreError(f"cannot lock {folder / LOCK_FILE}: {exc}") from exc
            _claims[claim._key] = _Claim(fd, 1)
        _write_holder(folder)
        return claim

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _claims_lock:
            held = _claims.get(self._key)
            if held is None:
                return
            held.users -= 1
            if held.users > 0:
                return
            del _claims[self._key]
            _remove_holder(self.folder)
            fcntl.flock(held.fd, fcntl.LOCK_UN)
            os.close(held.fd)


_serving_at: str | None = None      # this process serves HTTP here (`mindnet serve`): said in the holder file


def serving_at(url: str) -> None:
    """Say in the holder file of every folder this process holds (now or later) that it serves at `url`, so
    another process that finds the folder held can use this server instead (`mindnet mcp` does)."""
    global _serving_at
    _serving_at = url
    with _claims_lock:
        held = [Path(key) for key in _claims]
    for folder in held:
        _write_holder(folder)


def holder_url(folder: Path) -> str | None:
    """The URL the process holding `folder` serves at, when another live process holds it and said so."""
    if held_by_other(folder) is None:
        return None
    try:
        url = json.loads((Path(folder) / HOLDER_FILE).read_text()).get("url")
    except (OSError, ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def _write_holder(folder: Path) -> None:
    info = {"pid": os.getpid(), "command": " ".join(sys.argv)[:200], "started": time.time()}
    if _serving_at:
        info["url"] = _serving_at
    try:
        write_json(folder / HOLDER_FILE, info)
    except OSError as exc:      # a full disk: the lock still holds, a second process just learns less
        log.warning("cannot write %s: %s", folder / HOLDER_FILE, exc)


def _remove_holder(folder: Path) -> None:
    path = folder / HOLDER_FILE
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def replace_atomically(path: Path, write_to: Callable[[BinaryIO], object]) -> None:
    """Write `path` through `write_to(file)` atomically: a temp file beside it (owner-only), fsync, rename (a
    crash leaves the old file or the new one, never half of one)."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write_to(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    """Replace `path` atomically (temp file, fsync, rename), readable by the owner only."""
    replace_atomically(path, lambda fh: fh.write(json.dumps(data, separators=(",", ":")).encode("utf-8")))


class FolderMeta:
    """`mindnet.json`: per collection prefix its import token, vector size and vault. A damaged file is reported and
    treated as empty (the next import plans the whole vault again), never a traceback."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / META_FILE
        self.problem: str | None = None

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"format": META_FORMAT, "prefixes": {}}
        except (OSError, ValueError) as exc:
            self._damaged(f"{self.path} is damaged ({exc}); `mindnet ingest` reads the whole vault again and "
                          f"writes it anew")
            return {"format": META_FORMAT, "prefixes": {}}
        if not isinstance(data, dict) or not isinstance(data.get("prefixes"), dict):
            self._damaged(f"{self.path} is not a mindnet index file; `mindnet ingest` reads the whole vault again "
                          f"and writes it anew")
            return {"format": META_FORMAT, "prefixes": {}}
        return data

    def _damaged(self, problem: str) -> None:
        if report_damage(self.path, problem):     # said once, not on every read
            log.warning("%s", problem)
        self.problem = problem

    def get(self, prefix: str) -> dict[str, Any]:
        entry = self.read()["prefixes"].get(prefix)
        return entry if isinstance(entry, dict) else {}

    def update(self, prefix: str, **values: Any) -> None:
        data = self.read()
        entry = data["prefixes"].setdefault(prefix, {})
        for key, value in values.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
        data["format"] = META_FORMAT
        write_json(self.path, data)
        self.problem = None
        clear_damage(self.path)


def read_vault(folder: Path, prefix: str) -> str | None:
    """The vault the index of `prefix` in `folder` was built from (see `Store.read_vault`), without opening it."""
    vault = FolderMeta(folder).get(prefix).get("vault") if (Path(folder) / META_FILE).is_file() else None
    return vault if isinstance(vault, str) and vault else None


def read_token(folder: Path, prefix: str) -> str | None:
    """The import token of `prefix` in an index folder, without opening any shard (an unchanged re-import
    plans from the manifest and never opens the index)."""
    token = FolderMeta(folder).get(prefix).get("token")
    return token if isinstance(token, str) and token else None


def legacy_files(folder: Path) -> list[Path]:
    """What an older mindnet's qdrant-client local mode left in the folder (empty: none)."""
    folder = Path(folder)
    found = [folder / name for name in LEGACY if (folder / name).exists()]
    for pattern in LEGACY_GLOBS:
        found += sorted(folder.glob(pattern))
    return found if any(p.name in ("meta.json", "collection") for p in found) else []


def remove_legacy(folder: Path) -> int:
    """Delete the old local-mode files (after the index was rebuilt as Edge shards); the bytes freed."""
    freed = 0
    for path in legacy_files(folder):
        try:
            if path.is_dir():
                freed += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
                shutil.rmtree(path)
            else:
                freed += path.stat().st_size
                path.unlink()
        except OSError as exc:
            log.warning("cannot remove the old index file %s: %s", path, exc)
    return freed
