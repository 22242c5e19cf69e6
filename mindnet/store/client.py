"""Qdrant client factory: embedded local mode (a folder, the default), in-memory, or a Qdrant server.

Local mode allows one client per folder. mindnet writes a `mindnet.pid` file beside Qdrant's own lock so
that a second process is told which process holds the folder instead of Qdrant's bare RuntimeError.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import time
from pathlib import Path

from qdrant_client import QdrantClient

from mindnet.errors import StoreError, StoreLockedError
from mindnet.settings import Settings
from mindnet.store import local_growth
from mindnet.store.memory import long_lived

log = logging.getLogger(__name__)
HOLDER_FILE = "mindnet.pid"


def _holder_text(folder: Path) -> str:
    try:
        info = json.loads((folder / HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return "another process (unknown: no mindnet.pid file)"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"process {info.get('pid')} ({info.get('command', '?')}, started {started})"


def _write_holder(folder: Path) -> None:
    path = folder / HOLDER_FILE
    path.write_text(json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv)[:200], "started": time.time()}))
    atexit.register(release_holder, folder)


def release_holder(folder: Path) -> None:
    """Remove the `mindnet.pid` file when this process wrote it (after its client closed the folder: another
    process may open it now, and must not be told this one holds it)."""
    path = Path(folder) / HOLDER_FILE
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def held_by_other(folder: Path) -> str | None:
    """Who holds the local Qdrant folder, when its `mindnet.pid` names another live process (a cheap check before
    the seconds opening a big folder takes; a folder held by a non-mindnet client is only found by opening)."""
    try:
        pid = int(json.loads((folder / HOLDER_FILE).read_text()).get("pid"))
    except (OSError, ValueError, TypeError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None            # left by a process that is gone
    except PermissionError:
        pass                   # alive, another user's
    return _holder_text(folder)


def locked_error(folder: Path, holder: str) -> StoreLockedError:
    return StoreLockedError(
        f"the local Qdrant folder {folder} is in use by {holder}. Local mode allows one "
        f"process per folder: stop that process, use its server (`mindnet serve` offers import and query), "
        f"or run a Qdrant server and set MINDNET_QDRANT_URL")


def open_local(folder: Path | str) -> QdrantClient:
    local_growth.install()     # local mode's per-point np.append is O(n^2) per collection (see the module)
    if str(folder) == ":memory:":
        return QdrantClient(location=":memory:")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with long_lived():          # the points it unpickles live as long as the client
            client = QdrantClient(path=str(folder))
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise StoreError(f"cannot open local Qdrant at {folder}: {exc}") from exc
        raise locked_error(folder, _holder_text(folder)) from exc
    _write_holder(folder)
    return client


def open_server(url: str, api_key: str | None = None) -> QdrantClient:
    try:
        return QdrantClient(url=url, api_key=api_key, timeout=30)
    except Exception as exc:  # the client validates the URL eagerly
        raise StoreError(f"MINDNET_QDRANT_URL={url!r}: cannot create client: {exc}") from exc


def open_location(location: str | Path, *, api_key: str | None = None) -> QdrantClient:
    """A Qdrant server for an http(s) URL, else the local folder (or ":memory:")."""
    text = str(location)
    if text.startswith(("http://", "https://")):
        return open_server(text, api_key)
    return open_local(Path(text).expanduser() if text != ":memory:" else text)


def open_client(settings: Settings) -> QdrantClient:
    """The Qdrant client the settings name: the server at MINDNET_QDRANT_URL, else the local folder
    MINDNET_QDRANT_PATH (one process at a time; a second is told which process holds it)."""
    if settings.qdrant_url:
        return open_server(settings.qdrant_url, settings.qdrant_api_key)
    return open_local(settings.qdrant_path)


def is_local(client: QdrantClient) -> bool:
    from qdrant_client.local.qdrant_local import QdrantLocal
    return isinstance(getattr(client, "_client", None), QdrantLocal)
