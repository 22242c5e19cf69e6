"""Phase 2 of an import: the chunks' dense vectors, cache first; beside phase 1 or after it.

`EmbeddingWorker` embeds, in a thread, the chunks phase 1 hands over while it writes the rest.
`EmbeddingPhase` is the half of `Importer` (`mindnet.indexing.pipeline`) that runs phase 2 after phase 1
(or alone: `fill`) and turns what it failed on into report lines.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mindnet.indexing.progress import ImportProgress
from mindnet.indexing.report import ImportReport
from mindnet.indexing.vectors import FillReport, VectorFeed, afeed_vectors, afill_vectors
from mindnet.store import collections as coll
from mindnet.vault.scan import Issue

if TYPE_CHECKING:
    from mindnet.backends import Embedder
    from mindnet.indexing.state import IndexState
    from mindnet.store.engine import Store

__all__ = ["EmbeddingPhase", "EmbeddingWorker", "Progress"]

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]


class EmbeddingWorker:
    """Phase 2 beside phase 1: a thread embedding the chunks phase 1 hands over (`VectorFeed`) as it writes
    them, so the backend works while phase 1 plans and writes the rest. Phase 1 never waits for it; `finish()`
    (after phase 1) lets it embed what is queued and returns its `FillReport`."""

    def __init__(self, importer: EmbeddingPhase) -> None:
        self.feed = VectorFeed()
        self._importer = importer
        self._result: FillReport | None = None
        importer.progress.begin_embedding(0, 0)     # counts what phase 1 hands over
        self._thread = threading.Thread(target=self._run, name="mindnet-embed-beside", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        imp = self._importer

        def advance(n: int) -> None:
            imp.progress.embedded(n)
            imp.on_embedded()

        try:
            # the store is asked for only once phase 1 has written chunks (it opens it)
            self._result = asyncio.run(afeed_vectors(lambda: imp.store, imp.embedder, self.feed,
                                                     lock=imp.lock, progress=advance))
        except Exception as exc:  # noqa: BLE001 - the chunks keep no vector; phase 2 after phase 1 retries
            log.warning("embedding beside phase 1 stopped: %s", exc)
            self._result = FillReport(backend_error=str(exc))
        finally:
            self.feed.close()

    def finish(self) -> FillReport:
        self.feed.close()
        self._thread.join()
        self._importer.progress.end_embedding()
        return self._result or FillReport()


class EmbeddingPhase:
    """Phase 2 and its report lines (see the module docstring)."""

    store: Store
    store_open: bool
    embedder: Embedder
    lock: threading.RLock
    progress: ImportProgress
    on_embedded: Callable[[], None]
    _state: IndexState | None
    _token: str | None
    _summary_vectors: bool
    _save_manifest: Callable[[IndexState], None]     # StateKeeper's

    async def _phase2(self, report: ImportReport, *, progress: Progress | None,
                      should_stop: Callable[[], bool] | None, skip: set[str] | frozenset = frozenset()) -> None:
        if not self.store_open and (self._summary_vectors or self._state is not None
                                    and self._state.vectors_complete):
            return      # the manifest (or its summary), current by the folder's token: every chunk has its vector
        with self.lock:
            if not self.store.exists("chunks"):
                return
            total = self.store.count("chunks")
            missing = self.store.count("chunks", coll.WITHOUT_DENSE)
            if self.embedder.dim is None:
                self.embedder.dim = self.store.dim()
        self.progress.begin_embedding(total, total - missing)
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            self.progress.embedded(n)
            self.on_embedded()
            if progress:
                progress(done, missing, "embedding")

        try:
            fill = await afill_vectors(self.store, self.embedder, lock=self.lock, progress=advance,
                                       skip=skip,
                                       should_stop=should_stop)
        finally:
            self.progress.end_embedding()
        with self.lock:
            report.vectors_missing = self.store.count("chunks", coll.WITHOUT_DENSE)
            state = self._state
            if (report.vectors_missing == 0 and state is not None and not state.vectors_complete
                    and self._token is not None and self.store.read_token() == self._token):
                state.vectors_complete = True
                self._save_manifest(state)
        report.stopped_early = fill.stopped
        self.fill_issues(report, fill)

    def beside_issues(self, report: ImportReport, fill: FillReport) -> set[str]:
        """The report lines of the embedding beside phase 1 (the backend down is reported by the phase 2 that
        follows, which tries again); the chunks it failed on, which that phase 2 leaves alone."""
        if not fill.backend_error:
            self.fill_issues(report, fill)
        return fill.failed_ids

    @staticmethod
    def fill_issues(report: ImportReport, fill: FillReport) -> None:
        """The report lines of a phase 2 run: the backend down, or the chunks it failed on, by note."""
        if fill.backend_error:   # the backend is down: one line for all, not one per note
            missing = f"{report.vectors_missing} chunks" if report.vectors_missing else "some chunks"
            report.issues.append(Issue("warning", str(report.vault), (
                f"{missing} are not embedded yet: {fill.backend_error}; they are found by "
                f"keywords and links; run the import again when the embedding backend is back")))
            return
        by_note: dict[str, list[str]] = {}
        for line in fill.failed:
            path, _, error = line.partition(": ")
            by_note.setdefault(path, []).append(error)
        for path, errors in by_note.items():
            report.issues.append(Issue("warning", path, f"{len(errors)} chunk(s) not embedded: {errors[0]}; "
                                                        f"found by keywords and links until an import embeds them"))

    def fill(self, *, should_stop: Callable[[], bool] | None = None,
             skip: set[str] | frozenset = frozenset()) -> ImportReport:
        """Phase 2 alone: embed the chunks still without a dense vector."""
        report = ImportReport(vault="the index")
        started = time.perf_counter()
        calls0, texts0, backend0 = self.embedder.calls, self.embedder.embedded, self.embedder.seconds
        asyncio.run(self._phase2(report, progress=None, should_stop=should_stop, skip=skip))
        report.embedding_calls = self.embedder.calls - calls0
        report.embedded_texts = self.embedder.embedded - texts0
        report.seconds_embedding = self.embedder.seconds - backend0
        report.seconds_total = time.perf_counter() - started
        return report
