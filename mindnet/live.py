"""`LiveIndex`: keeps a `Mindnet` index in step with its vault while a server (or `mindnet watch`) runs.

Two worker threads. The notes worker runs phase 1 of every import, one after the other: the first catches up
with what changed while nothing was watching, later ones follow the watcher's change batches
(`mindnet.indexing.watch`). The vectors worker runs phase 2 beside it, embedding whatever chunks lack a vector.
So a note saved during an hour of embedding is written (and searchable) at once, and embedded in its turn; and
the embedding starts with phase 1's first written batch, not after its last.
A batch that arrives during an import is kept and imported right after it (a phase 1 still running yields to
it between its batches and writes the saved notes first), so a burst of saves costs one or two imports, never
one per file. An edit to the types config reloads it first; an invalid one is reported in the status and the
previous config stays in force.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindnet.errors import MindnetError
from mindnet.indexing.report import ImportReport
from mindnet.indexing.watch import ChangeBatch, watch_vault

if TYPE_CHECKING:
    from mindnet.service import Mindnet

log = logging.getLogger(__name__)
Listener = Callable[["Reimport"], None]


@dataclass
class Reimport:
    """One finished import of the live index: what triggered it and what it changed."""
    label: str                 # the note named in the status line: "re-imported 'X' 1 s ago"
    paths: list[str]           # vault-relative paths that changed (empty: the start-up catch-up)
    at: float                  # time.time() at the end
    seconds: float             # how long the import took
    report: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        keys = ("new", "changed", "moved", "deleted", "unchanged", "edges_rewritten", "embedded_texts")
        return {"label": self.label, "paths": self.paths[:20], "path_count": len(self.paths), "at": self.at,
                "seconds_ago": round(max(0.0, time.time() - self.at), 1), "seconds": round(self.seconds, 2),
                **{k: self.report.get(k, 0) for k in keys},
                "skipped": self.report.get("skipped", [])[:5]}


def label_of(paths: list[str]) -> str:
    if not paths:
        return "vault"
    name = Path(paths[0]).stem
    return name if len(paths) == 1 else f"{name} +{len(paths) - 1}"


class LiveIndex:
    def __init__(self, mindnet: Mindnet, *, watch: bool = True, quiet_ms: int | None = None) -> None:
        self.mindnet = mindnet
        self.watch = watch
        self.quiet_ms = quiet_ms
        self.imports = 0                       # imports finished by this live index
        self.last: Reimport | None = None
        self.error: str | None = None
        self.running = False                   # an import is running now
        self._listeners: list[Listener] = []
        self._mu = threading.Lock()
        self._wake = threading.Event()
        self._vectors = threading.Event()     # phase 1 wrote chunks: the vectors worker has work
        self._stop = threading.Event()
        self.embedding = False
        self._paths: set[str] = set()
        self._config = False
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ control

    def on_reimport(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self, *, catch_up: bool = True) -> LiveIndex:
        """Start the import worker (and the watcher); with `catch_up`, import once at once."""
        self._spawn(self._work, "mindnet-import")
        self._spawn(self._embed, "mindnet-vectors")
        if self.watch:
            ready = threading.Event()
            self._spawn(lambda: self._follow(ready), "mindnet-watch")
            ready.wait(timeout=10)
        if catch_up:
            self.request()
        return self

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._wake.set()
        self._vectors.set()
        for t in self._threads:
            t.join(timeout=timeout)

    def request(self, paths: list[str] | tuple[str, ...] = (), *, config: bool = False) -> None:
        """Ask for an import (of everything that changed; `paths` only name it in the status)."""
        with self._mu:
            self._paths.update(paths)
            self._config = self._config or config
            self._wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """True once no import is pending or running (for tests and `mindnet watch --once`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._mu:
                if not self._wake.is_set() and not self.running and not self._vectors.is_set() \
                        and not self.embedding:
                    return True
            time.sleep(0.02)
        return False

    def status(self) -> dict[str, Any]:
        with self._mu:
            pending = self._wake.is_set()
        return {"watching": self.watch and any(t.name == "mindnet-watch" and t.is_alive() for t in self._threads),
                "importing": self.running, "embedding": self.embedding, "pending": pending, "imports": self.imports,
                "last_reimport": self.last.as_dict() if self.last else None, "error": self.error}

    # ------------------------------------------------------------------ threads

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _follow(self, ready: threading.Event) -> None:
        settings = self.mindnet.settings
        kwargs = {"quiet_ms": self.quiet_ms} if self.quiet_ms else {}
        batches = watch_vault(Path(settings.vault_root), Path(settings.types_path), self._stop, **kwargs)
        ready.set()   # watchfiles starts watching on the first next(): changes from here on are seen
        try:
            for batch in batches:
                self._on_batch(batch)
        except Exception as exc:  # the watcher must not die silently: the status says it stopped
            log.exception("watching the vault failed")
            self.error = f"watching the vault stopped: {exc}"

    def _on_batch(self, batch: ChangeBatch) -> None:
        self.request(batch.notes, config=batch.config)

    def _take(self) -> tuple[list[str], bool]:
        with self._mu:
            paths, config = sorted(self._paths), self._config
            self._paths.clear()
            self._config = False
            self._wake.clear()
            self.running = True
        return paths, config

    def _work(self) -> None:
        while not self._stop.is_set():
            if not self._wake.wait(timeout=0.5) or self._stop.is_set():
                continue
            paths, config = self._take()
            try:
                self._import(paths, config)
            finally:
                with self._mu:
                    self.running = False

    def _embed(self) -> None:
        """Phase 2 whenever phase 1 wrote chunks; again while it makes progress (chunks written meanwhile)."""
        while not self._stop.is_set():
            if not self._vectors.wait(timeout=0.5) or self._stop.is_set():
                continue
            with self._mu:
                self._vectors.clear()
                self.embedding = True
            try:
                report = self.mindnet.fill_vectors(should_stop=self._stop.is_set)
            except Exception as exc:  # keep serving; the status names the failure, the next change retries
                self.error = f"embedding failed: {exc}"
                log.exception("embedding failed")
                continue
            finally:
                with self._mu:
                    self.embedding = False
            if report.embedded_texts and not self._stop.is_set():
                self._vectors.set()
            if report.issues:
                self.error = str(report.issues[-1])

    def _import(self, paths: list[str], config: bool) -> None:
        if config:
            try:
                self.mindnet.reload_types()
            except MindnetError as exc:
                self.error = f"{exc} (the previous types config stays in force)"
                log.warning("%s", self.error)
                return
        start = time.perf_counter()
        try:
            # phase 1 only; the vectors worker embeds beside it from its first written batch on. Newer changes
            # end it early: their notes go first, then the notes it planned and did not write
            report: ImportReport = self.mindnet.ingest(
                should_stop=lambda: self._wake.is_set() or self._stop.is_set(), first=paths, embed=False,
                progress=lambda done, total, what: self._vectors.set())
        except MindnetError as exc:
            self.error = str(exc)
            log.warning("re-import failed: %s", exc)
            return
        except Exception as exc:  # keep following the vault; the status names the failure
            self.error = f"re-import failed: {exc}"
            log.exception("re-import failed")
            return
        self.error = None
        self._vectors.set()
        self.imports += 1
        self.last = Reimport(label_of(paths), paths, time.time(), time.perf_counter() - start, report.as_dict())
        for listener in self._listeners:
            listener(self.last)
