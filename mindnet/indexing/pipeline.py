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
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.backends import Embedder
from mindnet.errors import MassDeleteError, StoreLockedError, VaultError
from mindnet.indexing.chunk_text import embedding_input
from mindnet.indexing.planning import (
    PIPELINE_VERSION,
    PlannedNote,
    VaultPlan,
    config_key,
    edges_fingerprint,
    entry_of,
    note_fingerprint,
    plan_changes,
    plan_vault,
    skipped_now,
)
from mindnet.indexing.progress import ImportProgress
from mindnet.indexing.report import ImportReport
from mindnet.indexing.state import REBUILDING, IndexState, NoteEntry, new_token
from mindnet.indexing.vectors import FillReport, VectorFeed, afeed_vectors, afill_vectors, chunk_points
from mindnet.settings import TypesConfig
from mindnet.store import collections as coll
from mindnet.store.engine import Point, Store, Where
from mindnet.store.folder import FolderClaim, held_by_other, read_token
from mindnet.vault.note import Note
from mindnet.vault.scan import Issue

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

    from mindnet.indexing.node_parser import MarkdownNoteParser

__all__ = ["PIPELINE_VERSION", "Importer", "ImportReport", "PlannedNote", "dry_run_payloads", "edges_fingerprint",
           "note_fingerprint", "plan_vault"]

log = logging.getLogger(__name__)
BATCH_NOTES = 16            # notes written in one step; a save waits for at most one step of a running import
Progress = Callable[[int, int, str], None]
RECORD_FIELDS = ["note_id", "fingerprint", "edges_hash", "chunk_ids", "edge_ids", "path", "title", "aliases",
                 "names"]
MASS_DELETE_MIN = 10        # an import deleting more than half of the index (and at least this many) asks first
MAX_URLS = 100              # external URLs listed in a note record (`url_count` counts them all)


@contextmanager
def _folder_claim(folder: Path | None) -> Iterator[bool]:
    """Hold an index folder as opening it would, without opening any shard: True while held; False when there is
    no such folder or another process holds it (opening it then reports who)."""
    if folder is None or not folder.is_dir() or held_by_other(folder):
        yield False
        return
    try:
        claim = FolderClaim.take(folder, create=False)
    except StoreLockedError:     # taken a moment ago
        yield False
        return
    try:
        yield True
    finally:
        claim.release()


def _placeholder(record: dict) -> NoteEntry:
    """An entry for an indexed note whose text this run does not know: the next run reads its file again."""
    return NoteEntry(note_id=record["note_id"], path=record.get("path", ""), size=-1, mtime_ns=-1, seen_ns=0,
                     content_hash="", fingerprint=record.get("fingerprint", ""),
                     edges_hash=record.get("edges_hash", ""), title=record.get("title", ""),
                     aliases=list(record.get("aliases") or []), links=[], named=[],
                     names=list(record.get("names") or []))


def _batches(changed: list[PlannedNote], lead: int) -> list[list[PlannedNote]]:
    """Write batches: the `lead` notes just saved alone first (searchable after one small write, not after a
    whole batch of others), then BATCH_NOTES at a time."""
    lead = min(lead, BATCH_NOTES)
    head = [changed[:lead]] if 0 < lead < len(changed) else []
    rest = changed[len(head[0]) if head else 0:]
    return head + [rest[i:i + BATCH_NOTES] for i in range(0, len(rest), BATCH_NOTES)]


def dry_run_payloads(planned: list[PlannedNote], types: TypesConfig) -> dict[str, list[dict]]:
    """The payloads an import would write, as plain JSON-able dicts (the seed's payload_dryrun)."""
    notes, chunks, edges = [], [], []
    for p in planned:
        n = p.note
        spec = types.types[n.type]
        notes.append({"note_id": n.note_id, "title": n.title, "names": n.names, "type": n.type, "path": n.path,
                      "tags": n.tags, "aliases": n.aliases, "urls": p.links.urls[:MAX_URLS] if p.links else [],
                      "url_count": p.links.url_count if p.links else 0, "retriever_weight": spec.retriever_weight,
                      "chunk_profile": spec.chunk_profile, "edge_defaults": spec.edge_defaults,
                      "chunk_ids": [x.node_id for x in p.nodes]})
        chunks += [dict(x.metadata) for x in p.nodes]
        edges += [e.payload() for e in p.edges]
    return {"notes": notes, "chunks": chunks, "edges": edges}


class EmbeddingWorker:
    """Phase 2 beside phase 1: a thread embedding the chunks phase 1 hands over (`VectorFeed`) as it writes
    them, so the backend works while phase 1 plans and writes the rest. Phase 1 never waits for it; `finish()`
    (after phase 1) lets it embed what is queued and returns its `FillReport`."""

    def __init__(self, importer: Importer) -> None:
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


class Importer:
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

    # ------------------------------------------------------------------ reading the index

    def stored_notes(self) -> dict[str, dict]:
        return {r.payload["note_id"]: r.payload for r in self.store.scroll("notes", payload=RECORD_FIELDS)}

    def _records(self, note_ids: list[str]) -> dict[str, dict]:
        """The stored records of these notes (those that have one)."""
        out: dict[str, dict] = {}
        for i in range(0, len(note_ids), 512):
            records = self.store.retrieve("notes", [coll.point_id(n) for n in note_ids[i:i + 512]],
                                          payload=RECORD_FIELDS)
            out.update((r.payload["note_id"], r.payload) for r in records if r.payload)
        return out

    def _trusted_state(self) -> IndexState | None:
        """The state of the index (this importer's own, or the manifest's) when the index's token says it is
        current; None when the whole vault must be planned."""
        if not self.store.complete():
            return None
        token = self.store.read_token()
        key = config_key(self.types, self.embedder.key)
        if token is None:
            return None
        if self._state is not None and self._token == token and self._state.config_key == key:
            return self._state
        state = IndexState.load(self.manifest, token, key) if self.manifest else None
        self._state, self._token, self._backlog = state, (token if state else None), {}
        return state

    def _offline_state(self) -> IndexState | None:
        """Before the index is opened: the manifest, if the token in the index folder's mindnet.json matches it."""
        if self.store_open or self.local_folder is None or self.manifest is None:
            return None
        if not all((self.local_folder / name / "segments").is_dir() for name in coll.names(self.prefix).values()):
            return None     # a collection's folder is gone: the index is opened and the whole vault planned
        token = read_token(self.local_folder, self.prefix)
        key = config_key(self.types, self.embedder.key)
        if token is None:
            return None
        state = IndexState.load(self.manifest, token, key)
        if state is not None:
            self._state, self._token, self._backlog = state, token, {}
        return state

    def _commit(self, state: IndexState) -> None:
        """Keep `state` as what the index holds: in memory, in the manifest, and as the index's token."""
        token = new_token()
        self._state, self._token = state, None
        if self.manifest is not None:
            try:
                state.save(self.manifest, token)
            except OSError as exc:
                log.warning("could not write the import manifest %s (%s); the next run reads the whole vault",
                            self.manifest, exc)
                with self.lock:
                    if self.store.read_token() == REBUILDING:    # every note is written: searches may go on
                        self.store.write_token(None)
                return
        with self.lock:
            if self.store.write_token(token):
                self._token = token

    def _invalidate(self) -> None:
        """Before the first write of a run: the manifest no longer matches the index until the run commits."""
        if self._token is not None or self.store.read_token() not in (None, REBUILDING):
            self.store.write_token(None)
        self._token = None

    # ------------------------------------------------------------------ writing

    def _delete_points(self, kind: str, keys: list[str]) -> None:
        if keys:
            self.store.delete(kind, [coll.point_id(k) for k in keys])

    def _write_edges(self, items: list[tuple[PlannedNote, dict | None]]) -> None:
        points = [Point(coll.point_id(e.edge_id), e.payload()) for p, _ in items for e in p.edges]
        for i in range(0, len(points), 2048):
            self.store.upsert("edges", points[i:i + 2048])
        for p, old in items:
            if old:
                keep = {e.edge_id for e in p.edges}
                self._delete_points("edges", [k for k in old.get("edge_ids", []) if k not in keep])

    def _note_payload(self, p: PlannedNote) -> dict:
        n = p.note
        spec = self.types.types[n.type]
        return {
            "note_id": n.note_id, "title": n.title, "names": n.names, "type": n.type, "path": n.path,
            "aliases": n.aliases, "urls": p.links.urls[:MAX_URLS] if p.links else [],
            "url_count": p.links.url_count if p.links else 0,
            "tags": n.tags, "retriever_weight": spec.retriever_weight, "chunk_profile": spec.chunk_profile,
            "index_note": n.type == self.types.index_type(), "edge_defaults": spec.edge_defaults,
            "updated": int(n.mtime), "fulltext": n.body,
            "frontmatter": n.frontmatter, "fingerprint": p.fingerprint, "edges_hash": p.edges_hash,
            "chunk_ids": [x.node_id for x in p.nodes], "edge_ids": [e.edge_id for e in p.edges],
            "embedding_model": self.embedder.key, "lang": p.nodes[0].metadata.get("lang", "") if p.nodes else "",
        }

    def _write_notes(self, planned: list[PlannedNote], pending: dict[str, dict | None] | None = None) -> None:
        """The note records; with `pending` (note id -> its stored record), unfinished records that list the
        union of the stored and the new chunk and edge ids."""
        def payload(p: PlannedNote) -> dict:
            data = self._note_payload(p)
            if pending is not None:
                old = pending.get(p.note.note_id) or {}
                data["fingerprint"] = "pending"
                data["chunk_ids"] = sorted(set(data["chunk_ids"]) | set(old.get("chunk_ids", [])))
                data["edge_ids"] = sorted(set(data["edge_ids"]) | set(old.get("edge_ids", [])))
            return data

        self.store.upsert("notes", [Point(coll.point_id(p.note.note_id), payload(p)) for p in planned])

    def _write_changed(self, batch: list[PlannedNote], stored: dict[str, dict], report: ImportReport) -> None:
        """Phase 1 for changed notes: chunks with payload and BM25 vector (and the dense vector when the cache
        holds it: no model is asked), edges and note records, under the index lock as one step."""
        texts = {n.node_id: embedding_input(n) for p in batch for n in p.nodes}
        cached = self.embedder.cached_vectors(list(texts.values()))
        points = chunk_points([n for p in batch for n in p.nodes],
                              {cid: cached[t] for cid, t in texts.items() if t in cached})
        with self.lock:
            # write-ahead: the note record first lists every chunk and edge this run may leave behind (old and
            # new), marked unfinished; a run that dies before the final record leaves a note that looks
            # changed, and the next run deletes exactly those listed ids that it does not write again
            self._write_notes(batch, pending={p.note.note_id: stored.get(p.note.note_id) for p in batch})
            for i in range(0, len(points), 256):
                self.store.upsert("chunks", points[i:i + 256])
            for p in batch:
                old = stored.get(p.note.note_id)
                if old:
                    keep = {n.node_id for n in p.nodes}
                    self._delete_points("chunks", [c for c in old.get("chunk_ids", []) if c not in keep])
            self._write_edges([(p, stored.get(p.note.note_id)) for p in batch])
            self._write_notes(batch)
        if self._feed is not None:
            self._hand_over([(p.note, p.nodes) for p in batch], cached=cached)   # not handed over while planning
        else:       # a server's vector worker embeds them: its progress counts them
            self.progress.queued(sum(pt.dense is None for pt in points))
        for p in batch:
            old = stored.get(p.note.note_id)
            if old is None:
                report.new += 1
            elif old.get("path") != p.note.path:
                report.moved += 1     # renamed with its id kept: the same note, its vectors from the cache
            else:
                report.changed += 1

    def _relink(self, relinked: list[PlannedNote], stored: dict[str, dict]) -> None:
        """Rewrite only the edges of unchanged notes, under the same write-ahead record as changed notes: a
        run that dies after the edge write leaves a pending note, which the next run rewrites whole."""
        for i in range(0, len(relinked), BATCH_NOTES):
            batch = relinked[i:i + BATCH_NOTES]
            self._write_notes(batch, pending={p.note.note_id: stored.get(p.note.note_id) for p in batch})
            self._write_edges([(p, stored[p.note.note_id]) for p in batch])
            self._write_notes(batch)

    def _remove_unlisted(self, stored: dict[str, dict]) -> int:
        """Delete chunks and edges that no note record lists. Since every write is announced by a pending record
        first, only an index written by an older version (which rewrote an unchanged note's edges before its
        record) can hold such points, and nothing else would ever remove them. Counting is cheap, so the scan
        of every point runs only when a collection holds more points than the records list."""
        removed = 0
        for kind, field in (("chunks", "chunk_ids"), ("edges", "edge_ids")):
            keys = {key for record in stored.values() for key in record.get(field, [])}
            if self.store.count(kind) <= len(keys):
                continue
            listed = {coll.point_id(key) for key in keys}
            stale = [r.id for r in self.store.scroll(kind, payload=False) if r.id not in listed]
            for i in range(0, len(stale), 2048):
                self.store.delete(kind, stale[i:i + 2048])
            removed += len(stale)
        if removed:
            log.warning("removed %d chunks and edges that no note listed (left by an interrupted older import)",
                        removed)
        return removed

    def _holds_unlisted(self, state: IndexState) -> bool:
        """Whether the chunks or edges collection holds more points than the state's records list (then a
        scan finds which): two counts instead of reading every record."""
        chunks = sum(e.chunks for e in state.entries.values())
        edges = sum(sum(e.kinds.values()) for e in state.entries.values())
        return self.store.count("chunks") > chunks or self.store.count("edges") > edges

    def _delete_notes(self, note_ids: list[str]) -> None:
        if not note_ids:
            return
        # the records first: a run killed after them leaves chunks and edges no record lists, which the next run
        # removes (a record listing deleted chunks would look like a damaged index to `mindnet check`)
        self._delete_points("notes", note_ids)
        for kind in ("chunks", "edges"):
            self.store.delete_where(kind, Where.field("note_id", *note_ids))

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
        calls0, texts0, backend0 = self.embedder.calls, self.embedder.embedded, self.embedder.seconds
        self.progress.start()
        report = ImportReport(vault=str(vault))
        # phase 2 begins beside phase 1: a worker embeds the chunks of the notes already written
        worker = EmbeddingWorker(self) if embed and self.overlap and feed is None else None
        self._feed = feed or (worker.feed if worker else None)
        self._fed = set()
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
            with _folder_claim(self.local_folder) as free:   # as exclusive as opening it, while we read
                state = self._offline_state() if free else None
                plan = plan_changes(vault, self.types, state, parser=self._parser, model_key=self.embedder.key) \
                    if state is not None else None
            if plan is not None and not plan.planned and not plan.gone:
                self._finish_unchanged(report, plan, state)
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
                dim = self._dim = self._dim or self.embedder.backend_dim or await self.embedder.aprobe_dim()
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

    def _finish_unchanged(self, report: ImportReport, plan: VaultPlan, state: IndexState) -> None:
        """Nothing to write: the report from the state alone."""
        report.issues.extend(plan.issues)
        report.planned, report.notes, report.unchanged = "changes", plan.notes, plan.notes
        self.progress.update(notes_total=plan.notes)
        if plan.touched:
            self._save_manifest(state)
        self._totals(report, state)

    def _totals(self, report: ImportReport, state: IndexState) -> None:
        failed = {i.path for i in report.skipped}
        for entry in state.entries.values():
            if entry.path in failed:
                continue
            report.chunks += entry.chunks
            report.edges_by_kind.update(entry.kinds)
            if mentioned := entry.kinds.get("mentions", 0):
                report.mention_edges += mentioned
                report.mention_sources[entry.path] = mentioned
            report.unresolved += [(entry.path, u) for u in entry.unresolved]
            report.add_links(entry.path, entry.link_counts)

    def _save_manifest(self, state: IndexState) -> None:
        """The same index (same token), entries refreshed (touched files, vectors complete)."""
        if self.manifest is not None and self._token is not None:
            try:
                state.save(self.manifest, self._token)
            except OSError as exc:
                log.warning("could not write the import manifest %s (%s)", self.manifest, exc)

    def _settle(self, state: IndexState | None, planned: list[PlannedNote], stored: dict[str, dict],
                gone: list[str], unwritten: set[str], report: ImportReport, seen: int, known: set[str]
                ) -> IndexState:
        """The state after this run's writes: an entry per note of the vault as the index holds it or, for the
        notes not written yet (`unwritten`, the next run writes them from the backlog), as it will."""
        if state is None:
            # a whole-vault plan: indexed notes it could not read keep their records; an entry that makes the
            # next run read them again (they have no known text)
            state = IndexState(config_key(self.types, self.embedder.key))
            planned_ids = {p.note.note_id for p in planned}
            for nid, old in stored.items():
                if nid not in planned_ids and nid not in gone:
                    state.put(_placeholder(old))
        for nid in gone:
            state.drop(nid)
        for p in planned:
            nid = p.note.note_id
            state.put(entry_of(p, report.issues, seen))
            # the text mentions are searched in, kept: a new title then costs no read of every file
            state.texts[nid] = (p.note.content_hash, f"{p.note.title}\n{p.note.body}".casefold())
        for nid in unwritten:
            if nid in known:    # what the index still holds for it (a manifest saved now keeps that)
                state.unwritten[nid] = _placeholder(stored[nid]) if nid in stored else None
            else:               # a backlog note whose record this run did not read: as the earlier run saw it
                state.unwritten.setdefault(nid, None)
        for nid in list(state.unwritten):
            if nid not in unwritten:
                del state.unwritten[nid]
        # every planned note's edges are as they will be once the backlog is written; a manifest saved while
        # notes are unwritten marks the others for new edges (`IndexState.save`)
        state.dirty.clear()
        return state

    async def _phase2(self, report: ImportReport, *, progress: Progress | None,
                      should_stop: Callable[[], bool] | None, skip: set[str] | frozenset = frozenset()) -> None:
        if not self.store_open and self._state is not None and self._state.vectors_complete:
            return      # the manifest, current by the folder's token, says every chunk has its vector
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

    def run(self, vault: Path, *, full: bool = False, progress: Progress | None = None,
            should_stop: Callable[[], bool] | None = None, first: Sequence[str] = (),
            embed: bool = True, feed: VectorFeed | None = None,
            confirm_deletes: Callable[[int, int], bool] | None = None) -> ImportReport:
        return asyncio.run(self.arun(vault, full=full, progress=progress, should_stop=should_stop, first=first,
                                     embed=embed, feed=feed, confirm_deletes=confirm_deletes))

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


