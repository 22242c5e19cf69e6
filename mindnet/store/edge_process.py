"""`EdgeProcessStore`: the embedded index (an `EdgeStore`) held by a child process, for `mindnet serve`.

Qdrant Edge's calls keep the interpreter lock for their whole length (qdrant-edge-py 0.9 never releases it): a
flush takes 10-200 ms on a busy disk, an upsert of a large note ~120 ms, opening a shard ~100 ms. Inside the
server every such call stopped the event loop, so /health and the chat waited behind an import (issue 27's
drill: /health p99 150-380 ms). Here the shards live in a child process; the server sends each call over a pipe
and waits for the answer without the lock, so its event loop goes on while the engine works.

The calls and their results are the `Store` interface's own small types (`Point`, `Record`, `Where`), pickled.
What stays in the server:
- the claim on the folder (`FolderClaim`): a second mindnet is told the server's process id, as before;
- `exists` and `opened`, which /health asks on every probe: answered here from the folder and from what the
  child said it has open, never queued behind a long call of the engine.
A child that dies (killed, out of memory) is reported as a StoreError naming its exit code; the next call starts
a new one, which opens the shards again (every write that returned is in their write-ahead logs).
"""

from __future__ import annotations

import builtins
import logging
import multiprocessing
import signal
import threading
import traceback
from collections.abc import Iterator, Sequence
from itertools import count, islice
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mindnet import errors
from mindnet.errors import MindnetError, StoreError
from mindnet.store.collections import names
from mindnet.store.edge_pages import PAGE_BYTES, SCROLL_PAGE, bytes_of, pages, size_of
from mindnet.store.engine import KINDS, Fields, Point, Record, Store, Where
from mindnet.store.folder import FolderClaim
from mindnet.store.space import DEFAULT_MIN_FREE_MB, SpaceGuard

log = logging.getLogger(__name__)
# Pickling a call or its answer is one C call that keeps the interpreter lock: an upsert of a 2 MB note's chunks
# stopped the server's event loop 116 ms (drill, hostile notes). So big calls go in pages, as to the engine.
SCROLL_BATCH = SCROLL_PAGE  # records per round trip of a scroll
START_TIMEOUT = 120.0       # seconds for the child to import its modules and open the folder (a busy machine)
CLOSE_TIMEOUT = 30.0


# the calls the child answers: `_forwarded` adds its own, these three are sent in pages by the methods below
FORWARDED: set[str] = {"upsert", "set_dense", "retrieve"}


def _forwarded(name: str) -> Any:
    FORWARDED.add(name)

    def call(self: EdgeProcessStore, *args: Any, **kwargs: Any) -> Any:
        return self._call(name, args, kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = getattr(Store, name).__doc__
    return call


class EdgeProcessStore(Store):
    """The three collections of `prefix` in `folder`, held by a child process (see the module's doc)."""

    def __init__(self, folder: Path | str, prefix: str = "mindnet", *, create: bool = True,
                 min_free_mb: float = DEFAULT_MIN_FREE_MB) -> None:
        self.folder = Path(folder).expanduser()
        self.location = str(self.folder)
        self.prefix = prefix
        self._names = names(prefix)
        self._options = {"create": create, "min_free_mb": min_free_mb}
        self._space = SpaceGuard(self.folder, min_free_mb)
        self._claim = FolderClaim.take(self.folder, create=create)
        self._lock = threading.Lock()          # one call at a time on the pipe (a call is a send and its answer)
        self._opened: frozenset[str] = frozenset()
        self._abandoned: list[int] = []        # scrolls a caller stopped early, forgotten with the next call
        self._scroll_keys = count()            # unique over the children (one that died had its own scrolls)
        self._process: Any = None
        self._conn: Connection | None = None
        self._closed = False
        try:
            self._start()
        except BaseException:
            self._claim.release()
            raise

    # ------------------------------------------------------------------ the child

    def _start(self) -> None:
        # forkserver, as the import's reading pool: a fork of a server with running threads could copy a lock
        # another thread held
        context = multiprocessing.get_context("forkserver")
        ours, theirs = context.Pipe()
        process = context.Process(target=_child, args=(theirs, str(self.folder), self.prefix, self._options),
                                  name="mindnet-index", daemon=True)
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        if not ours.poll(START_TIMEOUT):
            self._stop_child()
            raise StoreError(f"{self.folder}: the index process did not start within {START_TIMEOUT:.0f} s")
        try:
            reply = ours.recv()
        except EOFError:
            reply = None        # it died before it could say why (its stderr has it)
        self._answer(reply)

    def _ended(self) -> int | None:
        """The exit code of a child that ended (it is let go: the next call starts another)."""
        code = None
        if self._process is not None:
            self._process.join(1)
            code = self._process.exitcode
        self._stop_child()
        return code

    def _stop_child(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        with self._lock:
            if self._closed:
                raise StoreError(f"the index at {self.folder} was closed")
            if self._conn is None:      # the last child died: a new one opens the folder again
                log.warning("the index process ended; starting a new one for %s", self.folder)
                self._start()
            assert self._conn is not None
            abandoned, self._abandoned = self._abandoned, []
            try:
                self._conn.send((method, args, kwargs, abandoned))
                reply = self._conn.recv()
            except (EOFError, OSError) as exc:
                code = self._ended()
                raise StoreError(f"{self.folder}: the index process ended during `{method}` (exit code {code}); "
                                 f"the next request starts it again, and `mindnet check` tells whether the index "
                                 f"is whole") from exc
            return self._answer(reply)

    def _answer(self, reply: Any) -> Any:
        if reply is None:
            raise StoreError(f"{self.folder}: the index process ended while it opened the folder (exit code "
                             f"{self._ended()})")
        status, value, opened = reply
        self._opened = opened
        if status == "err":
            raise _rebuilt(*value)
        return value

    # ------------------------------------------------------------------ answered here

    @property
    def child_pid(self) -> int | None:
        """The index process's id (None: none runs now)."""
        return self._process.pid if self._process is not None else None

    def path(self, kind: str) -> Path:
        return self.folder / self._names[kind]

    def exists(self, kind: str) -> bool:
        return kind in self._opened or (self.path(kind) / "segments").is_dir()

    def opened(self, kind: str) -> bool:
        return kind in self._opened

    # ------------------------------------------------------------------ answered by the child

    create = _forwarded("create")
    dim = _forwarded("dim")
    drop = _forwarded("drop")
    def upsert(self, kind: str, points: Sequence[Point]) -> None:
        # the whole write is refused before any page of it is written, as by `EdgeStore.upsert`
        self._space.check(need=size_of(points) if points else 0, what=f"write of {len(points)} {kind}")
        for page in pages(points, max_bytes=PAGE_BYTES, size=bytes_of):
            self._call("upsert", (kind, list(page)), {})

    def set_dense(self, kind: str, vectors: dict[str, list[float]]) -> None:
        items = list(vectors.items())
        if items:
            self._space.check(need=len(items) * len(items[0][1]) * 8, what=f"write of {len(items)} vectors")
        for page in pages(items):
            self._call("set_dense", (kind, dict(page)), {})

    def retrieve(self, kind: str, ids: Sequence[str], *, payload: Fields = True, dense: bool = False,
                 sparse: bool = False) -> list[Record]:
        options = {"payload": payload, "dense": dense, "sparse": sparse}
        return [r for page in pages(list(ids)) for r in self._call("retrieve", (kind, list(page)), options)]

    delete = _forwarded("delete")
    delete_where = _forwarded("delete_where")
    flush = _forwarded("flush")
    optimize = _forwarded("optimize")
    count = _forwarded("count")
    search_dense = _forwarded("search_dense")
    search_sparse = _forwarded("search_sparse")
    facet = _forwarded("facet")
    verify_files = _forwarded("verify_files")
    read_token = _forwarded("read_token")
    write_token = _forwarded("write_token")
    read_vault = _forwarded("read_vault")
    write_vault = _forwarded("write_vault")

    def scroll(self, kind: str, where: Where | None = None, *, payload: Fields = True, dense: bool = False,
               sparse: bool = False, page: int | None = None) -> Iterator[Record]:
        batch = page or SCROLL_BATCH
        key = next(self._scroll_keys)
        self._call("scroll_open", (key, kind, where), {"payload": payload, "dense": dense, "sparse": sparse,
                                                       "page": page})
        done = False
        try:
            while not done:
                records, done = self._call("scroll_next", (key, batch), {})
                yield from records
        finally:
            if not done:        # a caller that stopped early: the child forgets it with the next call (a call
                self._abandoned.append(key)   # here could come from the garbage collector inside `_call`)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._conn is not None and self._process is not None and self._process.is_alive():
                    self._conn.send(("close", (), {}, []))
                    if self._conn.poll(CLOSE_TIMEOUT):
                        status, value, _ = self._conn.recv()
                        if status == "err":
                            log.warning("closing the index: %s", value[1])
                    self._process.join(CLOSE_TIMEOUT)
            except (EOFError, OSError):
                pass
            finally:
                self._stop_child()
                self._claim.release()


def _rebuilt(module: str, name: str, args: tuple, attrs: dict, trace: str) -> BaseException:
    """The child's exception as the same class here (mindnet's errors keep their fields: a DataWriteError its
    path); any other is a StoreError with the child's traceback in the log."""
    cls = getattr(errors if module == errors.__name__ else builtins if module == "builtins" else None, name, None)
    if isinstance(cls, type) and issubclass(cls, MindnetError):
        exc = cls.__new__(cls)
        Exception.__init__(exc, *args)
        exc.__dict__.update(attrs)
        return exc
    log.error("the index process failed:\n%s", trace)
    message = args[0] if args else name
    if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == "builtins":
        return cls(message)
    return StoreError(f"the index process failed: {name}: {message}")


def _portable(exc: BaseException) -> tuple:
    attrs = {k: v for k, v in vars(exc).items() if isinstance(v, str | int | float | bool | type(None) | list | dict)}
    return (type(exc).__module__, type(exc).__name__, tuple(str(a) for a in exc.args), attrs,
            "".join(traceback.format_exception(exc)))


def _child(conn: Connection, folder: str, prefix: str, options: dict[str, Any]) -> None:
    """The child's loop: one call at a time, until "close" or the server's end of the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C stops the server, which then closes this
    from mindnet.store.edge import EdgeStore

    def opened() -> frozenset[str]:
        return frozenset(k for k in KINDS if store is not None and store.opened(k))

    store = None
    try:
        store = EdgeStore(folder, prefix, claim=False, **options)
    except BaseException as exc:  # noqa: BLE001 - said to the server, which raises it
        conn.send(("err", _portable(exc), frozenset()))
        return
    conn.send(("ok", None, opened()))
    scrolls: dict[int, Iterator[Record]] = {}
    try:
        while True:
            try:
                method, args, kwargs, abandoned = conn.recv()
            except EOFError:
                return          # the server ended (killed): close the shards below
            for key in abandoned:
                scrolls.pop(key, None)
            try:
                if method == "close":
                    store.close()
                    conn.send(("ok", None, frozenset()))
                    return
                result = _run(store, scrolls, method, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - said to the server, which raises it
                conn.send(("err", _portable(exc), opened()))
            else:
                conn.send(("ok", result, opened()))
    finally:
        store.close()


def _run(store: Any, scrolls: dict[int, Iterator[Record]], method: str, args: tuple, kwargs: dict) -> Any:
    if method == "scroll_open":
        key, *rest = args
        scrolls[key] = store.scroll(*rest, **kwargs)
        return None
    if method == "scroll_next":
        key, batch = args
        if key not in scrolls:
            raise StoreError("the index process that ran this scroll ended; ask again")
        records = list(islice(scrolls[key], batch))
        done = len(records) < batch
        if done:
            del scrolls[key]
        return records, done
    if method not in FORWARDED:
        raise StoreError(f"the index process has no call `{method}`")
    return getattr(store, method)(*args, **kwargs)

