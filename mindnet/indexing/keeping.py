"""Keeping what the index holds: the import's `IndexState`, trusted only while the index's token matches it.

`StateKeeper` is the half of `Importer` (`mindnet.indexing.pipeline`) that loads the state (its own, or the
manifest's when the token in the index, or in the index folder's mindnet.json, says it is current), commits
it after a run's writes, and builds the state a run leaves (`_settle`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.errors import StoreLockedError
from mindnet.indexing.planning import PlannedNote, VaultPlan, config_key, entry_of
from mindnet.indexing.progress import ImportProgress
from mindnet.indexing.report import ImportReport
from mindnet.indexing.state import REBUILDING, IndexState, NoteEntry, new_token
from mindnet.store import collections as coll
from mindnet.store.folder import FolderClaim, held_by_other, read_token

if TYPE_CHECKING:
    from mindnet.backends import Embedder
    from mindnet.settings import TypesConfig
    from mindnet.store.engine import Store

__all__ = ["StateKeeper", "folder_claim", "placeholder"]

log = logging.getLogger(__name__)


@contextmanager
def folder_claim(folder: Path | None) -> Iterator[bool]:
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


def placeholder(record: dict) -> NoteEntry:
    """An entry for an indexed note whose text this run does not know: the next run reads its file again."""
    return NoteEntry(note_id=record["note_id"], path=record.get("path", ""), size=-1, mtime_ns=-1, seen_ns=0,
                     content_hash="", fingerprint=record.get("fingerprint", ""),
                     edges_hash=record.get("edges_hash", ""), title=record.get("title", ""),
                     aliases=list(record.get("aliases") or []), links=[], named=[],
                     names=list(record.get("names") or []))


class StateKeeper:
    """What the index holds, as this importer last left it (see the module docstring)."""

    store: Store
    store_open: bool
    types: TypesConfig
    embedder: Embedder
    manifest: Path | None
    local_folder: Path | None
    lock: threading.RLock
    prefix: str
    _state: IndexState | None
    _token: str | None
    _backlog: dict[str, PlannedNote]
    progress: ImportProgress

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
                    state.put(placeholder(old))
        for nid in gone:
            state.drop(nid)
        for p in planned:
            nid = p.note.note_id
            state.put(entry_of(p, report.issues, seen))
            # the text mentions are searched in, kept: a new title then costs no read of every file
            state.texts[nid] = (p.note.content_hash, f"{p.note.title}\n{p.note.body}".casefold())
        for nid in unwritten:
            if nid in known:    # what the index still holds for it (a manifest saved now keeps that)
                state.unwritten[nid] = placeholder(stored[nid]) if nid in stored else None
            else:               # a backlog note whose record this run did not read: as the earlier run saw it
                state.unwritten.setdefault(nid, None)
        for nid in list(state.unwritten):
            if nid not in unwritten:
                del state.unwritten[nid]
        # every planned note's edges are as they will be once the backlog is written; a manifest saved while
        # notes are unwritten marks the others for new edges (`IndexState.save`)
        state.dirty.clear()
        return state

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

    def _finish_unchanged(self, report: ImportReport, plan: VaultPlan, state: IndexState) -> None:
        """Nothing to write: the report from the state alone."""
        report.issues.extend(plan.issues)
        report.planned, report.notes, report.unchanged = "changes", plan.notes, plan.notes
        self.progress.update(notes_total=plan.notes)
        if plan.touched:
            self._save_manifest(state)
        self._totals(report, state)
