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
from mindnet.indexing.summary import add_totals, drop_summary, read_summary, report_unchanged, write_summary
from mindnet.store import collections as coll
from mindnet.store.folder import FolderClaim, held_by_other, read_token
from mindnet.vault.scan import Issue, stat_notes

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
    _summary_vectors: bool = False   # this run found nothing changed by the summary: every chunk has its vector
    _vault: Path | None = None       # the vault of the last run (its files confirm entries read too soon)
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

    def _offline_token(self) -> str | None:
        """Before the index is opened: the token in the index folder's mindnet.json, if every collection's
        folder is there (else the index is opened and the whole vault planned)."""
        if self.store_open or self.local_folder is None or self.manifest is None:
            return None
        if not all((self.local_folder / name / "segments").is_dir() for name in coll.names(self.prefix).values()):
            return None
        return read_token(self.local_folder, self.prefix)

    def _unchanged_by_summary(self, vault: Path, report: ImportReport
                              ) -> tuple[bool, tuple[dict, list[Issue]] | None]:
        """Before the index is opened: True when the manifest's summary says nothing changed (`report` is then
        filled), without loading the manifest; else False and the vault's stat scan, when one was made."""
        token = self._offline_token()
        summary = read_summary(self.manifest, token, config_key(self.types, self.embedder.key)) \
            if token is not None and self.manifest is not None else None
        if summary is None:
            return False, None
        scanned = stat_notes(vault, self.types.exclude)
        if not report_unchanged(summary, *scanned, report):
            return False, scanned
        self._summary_vectors = True    # written only when every chunk had its vector (see `_phase2`)
        self.progress.update(notes_total=report.notes)
        return True, None

    def _offline_state(self) -> IndexState | None:
        """Before the index is opened: the manifest, if the token in the index folder's mindnet.json matches it."""
        token = self._offline_token()
        if token is None or self.manifest is None:
            return None
        state = IndexState.load(self.manifest, token, config_key(self.types, self.embedder.key))
        if state is not None:
            self._state, self._token, self._backlog = state, token, {}
        return state

    def _commit(self, state: IndexState) -> None:
        """Keep `state` as what the index holds: in memory, in the manifest, and as the index's token."""
        token = new_token()
        self._state, self._token, self._summary_vectors = state, None, False
        if self.manifest is not None:
            try:
                self._save_with_summary(state, token)
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

    def _save_with_summary(self, state: IndexState, token: str) -> None:
        assert self.manifest is not None
        if self._vault is not None:
            settled = state.confirm_settled(self._vault)
            if settled:
                log.info("%d notes read right after they were written: unchanged since, trusted from now on", settled)
        drop_summary(self.manifest)
        state.save(self.manifest, token)
        if self.local_folder is not None:   # only an embedded index is checked without opening it
            write_summary(self.manifest, state, token)

    def _save_manifest(self, state: IndexState) -> None:
        """The same index (same token), entries refreshed (touched files, vectors complete)."""
        if self.manifest is not None and self._token is not None:
            try:
                self._save_with_summary(state, self._token)
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
        add_totals(report, state)

    def _finish_unchanged(self, report: ImportReport, plan: VaultPlan | None, state: IndexState | None) -> bool:
        """When `plan` has nothing to write: the report from the state alone (and the manifest's summary, which
        was missing or stale, written for the next run), and True."""
        if plan is None or state is None or plan.planned or plan.gone:
            return False
        report.issues.extend(plan.issues)
        report.planned, report.notes, report.unchanged = "changes", plan.notes, plan.notes
        self.progress.update(notes_total=plan.notes)
        if plan.touched:
            self._save_manifest(state)
        elif self.manifest is not None and self._token is not None and self.local_folder is not None:
            write_summary(self.manifest, state, self._token)
        self._totals(report, state)
        return True
