"""Writing an import into the store, one step at a time: note records, chunks' and edges' stale ids, deletes.

`IndexWriter` is the writing half of `Importer` (`mindnet.indexing.pipeline`), which gives it `store`, `types`
and `embedder`. The order of the steps that makes a run safe to kill (a pending record listing every id first,
the final record last) is the pipeline's; these are the steps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from mindnet.indexing.chunk_text import embedding_input
from mindnet.indexing.progress import ImportProgress
from mindnet.indexing.report import ImportReport
from mindnet.indexing.vectors import VectorFeed, chunk_points
from mindnet.store import collections as coll
from mindnet.store.engine import Point, Store, Where

if TYPE_CHECKING:

    from mindnet.backends import Embedder
    from mindnet.indexing.planning import PlannedNote
    from mindnet.indexing.state import IndexState
    from mindnet.settings import TypesConfig

__all__ = ["MAX_URLS", "RECORD_FIELDS", "IndexWriter", "dry_run_payloads"]

log = logging.getLogger(__name__)
RECORD_FIELDS = ["note_id", "fingerprint", "edges_hash", "chunk_ids", "edge_ids", "path", "title", "aliases",
                 "names"]
MAX_URLS = 100              # external URLs listed in a note record (`url_count` counts them all)




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


class IndexWriter:
    """The store writes of an import (see the module docstring); reads the stored note records too."""

    store: Store
    types: TypesConfig
    embedder: Embedder
    lock: threading.RLock
    progress: ImportProgress
    _feed: VectorFeed | None
    _hand_over: Callable[..., None]     # Importer's: a batch's texts to the embedding beside phase 1

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
