"""The import pipeline: vault -> notes, chunks and edges in Qdrant, incrementally, in two phases.

The first run (and any run whose manifest does not match the index) reads, parses and links the whole vault;
later runs plan only the files whose stat changed and the notes whose links or mentions they affect
(`mindnet.indexing.planning`, `mindnet.indexing.state`), with the same result. Links heal and mentions appear
without special scripts. Only what differs from the index is written.

Phase 1 needs no embedding model (only a one-text probe of its vector size when chunks are written):
  - a note whose fingerprint (file bytes, path, type settings, embedding model) changed is re-chunked and
    rewritten: chunks with payload and BM25 sparse vector (and the dense vector when the embedding cache
    already holds it), edges, note record; its stale chunks and edges are removed;
  - an unchanged note whose derived edges changed gets only its edges rewritten;
  - notes gone from the vault lose their note, chunks and edges.
Search works from here on: lexical and graph everywhere, dense where a chunk has its vector.
Phase 2 (`mindnet.indexing.vectors`) embeds every chunk still without a dense vector, cache first.

Per note the order is: a pending note record listing every chunk and edge id old and new (write-ahead), then
chunks -> edges -> the final note record carrying the fingerprint. An edge-only rewrite follows the same order.
A run that dies half-way through phase 1 leaves pending notes that simply look changed to the next run, which
finishes the job and deletes the listed chunks and edges its new record does not list. Points no record lists
at all (left by older versions) are removed at the start of the next run. A run that dies in phase 2 leaves
chunks without a vector, which the next run's phase 2 fills. A chunk the backend fails on keeps no vector and is
named in the report; its text is searchable by keywords.

The module holds the run (`Importer.arun`: phase 1's order of steps); `Importer` takes the single store writes
from `mindnet.indexing.writing`, the index state and its manifest from `mindnet.indexing.keeping`, and phase 2
from `mindnet.indexing.embedding_phase`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.backends import Embedder
from mindnet.errors import MassDeleteError, VaultError
from mindnet.indexing.chunk_text import embedding_input
from mindnet.indexing.embedding_phase import EmbeddingPhase, EmbeddingWorker, Progress
from mindnet.indexing.keeping import StateKeeper, folder_claim
from mindnet.indexing.planning import (
    PIPELINE_VERSION,
    PlannedNote,
    VaultPlan,
    edges_fingerprint,
    note_fingerprint,
    plan_changes,
    plan_vault,
    skipped_now,
)
from mindnet.indexing.progress import ImportProgress
from mindnet.indexing.report import ImportReport
from mindnet.indexing.state import REBUILDING, IndexState
from mindnet.indexing.vectors import VectorFeed
from mindnet.indexing.writing import IndexWriter, dry_run_payloads
from mindnet.settings import TypesConfig
from mindnet.store import collections as coll
from mindnet.store.engine import Store
from mindnet.vault.note import Note

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

    from mindnet.indexing.node_parser import MarkdownNoteParser

__all__ = ["PIPELINE_VERSION", "EmbeddingWorker", "ImportReport", "Importer", "PlannedNote", "Progress",
           "dry_run_payloads", "edges_fingerprint", "note_fingerprint", "plan_vault"]

log = logging.getLogger(__name__)
BATCH_NOTES = 16            # notes written in one step; a save waits for at most one step of a running import
MASS_DELETE_MIN = 10        # an import deleting more than half of the index (and at least this many) asks first


def _batches(changed: list[PlannedNote], lead: int) -> list[list[PlannedNote]]:
    """Write batches: the `lead` notes just saved alone first (searchable after one small write, not after a
    whole batch of others), then BATCH_NOTES at a time."""
    lead = min(lead, BATCH_NOTES)
    head = [changed[:lead]] if 0 < lead < len(changed) else []
    rest = changed[len(head[0]) if head else 0:]
    return head + [rest[i:i + BATCH_NOTES] for i in range(0, len(rest), BATCH_NOTES)]


class Importer(StateKeeper, IndexWriter, EmbeddingPhase):
    """The incremental vault import: notes, chunks and edges into the three collections; unchanged notes cost
    nothing, deleted notes leave nothing behind, one bad file is a report line. Usually built for you by
    `Mindnet.from_env().importer`; `importer.run(vault_path, full=False)` returns the `ImportReport`."""

    def __init__(self, *, store: Store | Callable[[], Store], prefix: str, embedder: Embedder, types: TypesConfig,
                 lock: AbstractContextManager | None = None, progress: ImportProgress | None = None,
                 on_written: Callable[[], None] | None = None, on_embedded: Callable[[], None] | None = None,
                 manifest: Path | None = None, local_folder: Path | None = None) -> None:
        # a store, or how to open one: an import that finds nothing changed (by the manifest and the token in the
        # index folder's mindnet.json) never opens the index
        self._store = store if isinstance(store, Store) else None
        self._open_store = store if not isinstance(store, Store) else None
        self.local_folder = local_folder
        self.prefix = prefix
        self.embedder = embedder
        self.types = types
        # a server shares the one store with its searches: each write step takes `lock`, so a
        # search runs between two batches (and sees every note written so far) instead of after the import
        self.lock = lock or threading.RLock()   # also between phase 1 and an embedding worker beside it
        self.progress = progress or ImportProgress()
        self.on_written = on_written or (lambda: None)     # notes, chunks or edges changed
        self.on_embedded = on_embedded or (lambda: None)   # dense vectors were added
        self.manifest = manifest          # where the state is kept between processes (None: in memory only)
        self._state: IndexState | None = None   # what the index holds, as this importer last left it
        self._token: str | None = None          # the notes collection's token that goes with `_state`
        # the plans of `_state.unwritten`: notes a run planned but stopped before writing (newer saves went
        # first); the next run writes them after its own notes, without reading or linking them again
        self._backlog: dict[str, PlannedNote] = {}
        self._dim: int | None = None            # the backend's vector size, asked once per importer
        self._feed: VectorFeed | None = None    # during a run with an embedding worker beside phase 1
        self.rebuilding = False      # phase 1 of a full rebuild runs: searches are refused, not kept waiting
        self._confirm_deletes: Callable[[int, int], bool] | None = None    # this run's answer to mass deletes
        self._fed: set[str] = set()             # notes whose texts this run handed to it
        self.overlap = True     # `run(embed=True)` embeds beside phase 1 (False: after it; benchmarks compare)

    @cached_property
    def parser(self) -> MarkdownNoteParser:
        # built when a note is chunked: an unchanged vault never imports LlamaIndex
        from mindnet.indexing.node_parser import MarkdownNoteParser
        return MarkdownNoteParser.from_config(self.types)

    def _parser(self) -> MarkdownNoteParser:
        return self.parser

    def plan(self, vault: Path, report: ImportReport, owners: dict[str, str] | None = None,
             on_chunked: Callable[[Note, list[TextNode], str], None] | None = None) -> list[PlannedNote]:
        return plan_vault(vault, self.types, report, model_key=self.embedder.key, parser=self.parser, owners=owners,
                          on_chunked=on_chunked)

    def _hand_over(self, notes: list[tuple[Note, list[TextNode]]], *,
                   cached: dict[str, list[float]] | None = None) -> None:
        """The texts of these notes' chunks (those without a cached vector) to the embedding beside phase 1."""
        if self._feed is None:
            return
        items = [(coll.point_id(n.node_id), text, note.path) for note, nodes in notes
                 if note.note_id not in self._fed for n in nodes if (text := embedding_input(n)) not in (cached or {})]
        self._fed.update(note.note_id for note, _ in notes)
        self._feed.put(items)
        self.progress.queued(len(items))

    @property
    def store(self) -> Store:
        if self._store is None:
            assert self._open_store is not None
            self._store = self._open_store()
        return self._store

    @property
    def store_open(self) -> bool:
        return self._store is not None

    def _relink(self, relinked: list[PlannedNote], stored: dict[str, dict]) -> None:
        """Rewrite only the edges of unchanged notes, under the same write-ahead record as changed notes: a
        run that dies after the edge write leaves a pending note, which the next run rewrites whole."""
        for i in range(0, len(relinked), BATCH_NOTES):
            batch = relinked[i:i + BATCH_NOTES]
            self._write_notes(batch, pending={p.note.note_id: stored.get(p.note.note_id) for p in batch})
            self._write_edges([(p, stored[p.note.note_id]) for p in batch])
            self._write_notes(batch)

    # ------------------------------------------------------------------ the run

    async def arun(self, vault: Path, *, full: bool = False, progress: Progress | None = None,
                   should_stop: Callable[[], bool] | None = None, first: Sequence[str] = (),
                   embed: bool = True, feed: VectorFeed | None = None,
                   confirm_deletes: Callable[[int, int], bool] | None = None) -> ImportReport:
        """Phase 1 (notes, chunks, edges; no model), then, with `embed`, phase 2 (dense vectors, cache first).
        Notes at the paths in `first` are written first. `should_stop()` is asked between batches of either
        phase: when it says yes, the run ends early and the next run continues where this one stopped.
        A run that would delete more than half of the indexed notes (at least MASS_DELETE_MIN) writes nothing
        unless `confirm_deletes(deleting, indexed)` says yes (MassDeleteError)."""
        started = time.perf_counter()
        self._confirm_deletes = confirm_deletes
        self._vault = vault
        calls0, texts0, backend0 = self.embedder.calls, self.embedder.embedded, self.embedder.seconds
        self.progress.start()
        report = ImportReport(vault=str(vault))
        # phase 2 begins beside phase 1: a worker embeds the chunks of the notes already written
        worker = EmbeddingWorker(self) if embed and self.overlap and feed is None else None
        self._feed = feed or (worker.feed if worker else None)
        self._fed, self._summary_vectors = set(), False
        try:
            # a rebuild drops the index: searches are refused at once (IndexRebuildingError: `rebuilding`) until
            # its phase 1 has written every note, instead of waiting or finding the index half empty
            self.rebuilding = full
            with self.lock if full else nullcontext():
                await self._phase1(vault, report, full=full, progress=progress,
                                   should_stop=None if full else should_stop, first=set(first))
        except BaseException:
            self.progress.end_notes(failed=True)
            raise
        finally:
            self.rebuilding = False
            self._feed = None
            if worker is not None:
                worker.feed.close()
        self.progress.end_notes()
        skip: set[str] = set()
        if worker is not None:
            skip = self.beside_issues(report, await asyncio.to_thread(worker.finish))
        if embed and not report.stopped_early:
            await self._phase2(report, progress=progress, should_stop=should_stop, skip=skip)
        report.embedding_calls = self.embedder.calls - calls0
        report.embedded_texts = self.embedder.embedded - texts0
        report.seconds_embedding = self.embedder.seconds - backend0
        report.seconds_total = time.perf_counter() - started
        return report

    async def _phase1(self, vault: Path, report: ImportReport, *, full: bool, progress: Progress | None,
                      should_stop: Callable[[], bool] | None = None, first: set[str] | frozenset = frozenset()
                      ) -> None:
        start1 = time.perf_counter()
        seen = time.time_ns()     # files are read after this: an entry's stat is never newer than its text
        state = plan = None
        if not full and not self.store_open:
            with folder_claim(self.local_folder) as free:   # as exclusive as opening it, while we read
                done, scanned = self._unchanged_by_summary(vault, report) if free else (False, None)
                state = self._offline_state() if free and not done else None
                plan = plan_changes(vault, self.types, state, parser=self._parser, model_key=self.embedder.key,
                                    scanned=scanned) if state is not None else None
                if done or self._finish_unchanged(report, plan, state):
                    report.seconds_phase1 = time.perf_counter() - start1
                    return
        if plan is None:
            with self.lock:
                state = None if full else self._trusted_state()
            plan = plan_changes(vault, self.types, state, parser=self._parser, model_key=self.embedder.key) \
                if state is not None else None
        else:
            with self.lock:
                trusted = self._trusted_state()    # Qdrant opened now: its token must still say the same
            if trusted is not state:
                state = trusted
                plan = plan_changes(vault, self.types, state, parser=self._parser, model_key=self.embedder.key) \
                if state is not None else None
        try:
            await self._write_plan(vault, report, plan, state, full=full, progress=progress,
                                   should_stop=should_stop, first=first, seen=seen)
        except BaseException:
            self._state, self._backlog = None, {}   # the token stays cleared: the next run plans the whole vault
            raise
        report.seconds_phase1 = time.perf_counter() - start1

    def _allow_deletes(self, vault: Path, deleting: int, indexed: int) -> None:
        """More than half of the index deleted at once is more often a wrong or unmounted vault folder than a
        clean-up: asked first (before anything is written), refused without an answer."""
        if deleting < MASS_DELETE_MIN or deleting * 2 <= indexed:
            return
        if self._confirm_deletes is not None and self._confirm_deletes(deleting, indexed):
            return
        raise MassDeleteError(
            f"this import would delete {deleting} of the {indexed} notes in the index: the vault {vault} no longer "
            f"has them. Nothing was written. Is it the right vault folder, and is it mounted? If the notes are gone "
            f"on purpose, confirm: `mindnet ingest --yes` (or answer y)", deleting=deleting, indexed=indexed)

    async def _write_plan(self, vault: Path, report: ImportReport, plan: VaultPlan | None,
                          state: IndexState | None, *, full: bool, progress: Progress | None,
                          should_stop: Callable[[], bool] | None, first: set[str] | frozenset, seen: int) -> None:
        dim: int | None = None
        if plan is not None:
            # only what changed, and the notes whose links or mentions it affects; their records by id
            assert state is not None
            report.issues.extend(plan.issues)
            report.seconds_mentions = plan.seconds_mentions
            report.neighbours = plan.neighbours
            report.planned = "changes"
            planned = plan.planned
            with self.lock:
                stored = self._records([p.note.note_id for p in planned])
            complete = True
            total = plan.notes
        else:
            with self.lock:
                indexed = self.store.complete()
                before = self.stored_notes() if indexed else {}
            def hand_over(note: Note, nodes: list[TextNode], fingerprint: str) -> None:
                # a note to write: its texts are embedded while the vault is read and linked on
                if before.get(note.note_id, {}).get("fingerprint") != fingerprint:
                    self._hand_over([(note, nodes)])

            planned = self.plan(vault, report, owners={nid: old.get("path", "") for nid, old in before.items()},
                                on_chunked=hand_over if self._feed is not None else None)
            total = len(planned)
            if full:
                # ask the backend first: a rebuild that cannot embed must not have dropped the index
                dim = self._dim = await self.embedder.aprobe_dim()
                with self.lock:
                    self.store.drop()
                    self.store.create(dim)
                    self.store.write_token(REBUILDING)   # until the commit: a kill leaves it, searches then refuse
            with self.lock:
                complete = self.store.complete()
            stored = before if complete and not full else {}     # a rebuild starts from empty collections
            if stored and not planned and not full:
                raise VaultError(f"no notes found in {vault}, but the index holds {len(stored)} notes; importing "
                                 f"would delete them all. Check the vault path (MINDNET_VAULT_ROOT); to empty the "
                                 f"index on purpose, run with --full", path=str(vault))
        self.progress.update(notes_total=total)
        changed = [p for p in planned if stored.get(p.note.note_id, {}).get("fingerprint") != p.fingerprint]
        changed.sort(key=lambda p: p.note.path not in first)   # the notes just saved go first (stable sort)
        changed_ids = {p.note.note_id for p in changed}
        relinked = [p for p in planned if p.note.note_id not in changed_ids
                    and stored[p.note.note_id].get("edges_hash") != p.edges_hash]
        if plan is not None:
            gone = plan.gone
        else:
            current = {p.note.note_id for p in planned}
            # a note that cannot be read now (or sits in a folder that cannot be listed) keeps its previous
            # version
            gone = [nid for nid, old in stored.items()
                    if nid not in current and not skipped_now(old.get("path", ""), report.skipped)]
        if not full:
            self._allow_deletes(vault, len(gone), len(state.entries) if plan is not None and state else len(stored))
        # the notes an earlier run planned and did not write (it yielded to newer saves), unless planned again
        # now or gone: written after this run's own notes, their stored records read when their turn comes
        planned_ids = {p.note.note_id for p in planned}
        backlog = [p for nid, p in self._backlog.items() if nid not in planned_ids and nid not in set(gone)] \
            if plan is not None else []
        changed += backlog
        changed_ids |= {p.note.note_id for p in backlog}
        known = set(planned_ids)     # notes whose stored record (or its absence) is in `stored`
        if changed or relinked or gone or not complete:
            with self.lock:
                if complete:
                    self._invalidate()
        if changed or not complete:
            # only a run that writes chunks asks the backend for its size, once per importer (a no-change
            # re-import never calls it); a size differing from the chunks collection stops here, before
            # anything is written
            if dim is None:
                dim = self._dim = self._dim or await self.embedder.abackend_dim()
            with self.lock:
                self.store.create(dim)
        with self.lock:
            self._delete_notes(gone)
        report.deleted = len(gone)
        if plan is None and stored:
            kept = set(stored) - set(gone)
            with self.lock:
                self._remove_unlisted({nid: stored[nid] for nid in kept})
        elif plan is not None and state is not None:
            with self.lock:
                if self._holds_unlisted(state):
                    self._remove_unlisted(self.stored_notes())

        report.unchanged = total - len(changed)
        if relinked:
            with self.lock:
                self._relink(relinked, stored)
            report.edges_rewritten = len(relinked)

        self.progress.update(notes_to_write=len(changed))
        done = 0
        for batch in _batches(changed, sum(p.note.path in first for p in changed)):
            if unknown := [p.note.note_id for p in batch if p.note.note_id not in known]:
                with self.lock:
                    stored.update(self._records(unknown))
                known.update(unknown)
            self._write_changed(batch, stored, report)
            done += len(batch)
            self.progress.update(notes_written=done)
            self.on_written()
            if progress:
                progress(done, len(changed), batch[-1].note.path)
            if should_stop and should_stop() and done < len(changed):
                report.stopped_early = True   # newer changes: the next run plans again and writes the rest
                break
        if gone or relinked:
            self.on_written()

        if changed:
            state_vectors = False    # chunks written: phase 2 has work (unless the cache gave every vector)
        else:
            state_vectors = bool(state and state.vectors_complete)
        written = {p.note.note_id for p in changed[:done]}
        unwritten = changed_ids - written
        state = self._settle(state, planned, stored, gone, unwritten, report, seen, known)
        self._backlog = {p.note.note_id: p for p in changed[done:]}
        state.vectors_complete = state_vectors
        if plan is None or changed or relinked or gone or plan.touched:
            self._commit(state)
        report.notes = total
        self._totals(report, state)

    def run(self, vault: Path, *, full: bool = False, progress: Progress | None = None,
            should_stop: Callable[[], bool] | None = None, first: Sequence[str] = (),
            embed: bool = True, feed: VectorFeed | None = None,
            confirm_deletes: Callable[[int, int], bool] | None = None) -> ImportReport:
        return asyncio.run(self.arun(vault, full=full, progress=progress, should_stop=should_stop, first=first,
                                     embed=embed, feed=feed, confirm_deletes=confirm_deletes))

