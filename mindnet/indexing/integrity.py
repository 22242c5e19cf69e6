"""Integrity of what the import wrote (notes list their chunks and edges, write-ahead records): `mindnet check`."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field

from mindnet.indexing.state import REBUILDING
from mindnet.store.collections import WITHOUT_DENSE
from mindnet.store.engine import KINDS, Store, Where

log = logging.getLogger(__name__)


@dataclass
class IntegrityReport:
    notes: int = 0
    chunks: int = 0
    edges: int = 0
    dangling_edges: list[dict] = field(default_factory=list)      # resolved edges whose end does not exist
    unresolved: list[dict] = field(default_factory=list)          # links to notes that do not exist (yet): the
                                                                  # normalised target and the link as written
    orphan_chunks: list[str] = field(default_factory=list)        # chunks whose note is gone
    missing_chunks: list[str] = field(default_factory=list)       # chunks a note lists that are not stored
    unlisted: list[str] = field(default_factory=list)             # chunks/edges their note does not list
    unfinished_notes: list[str] = field(default_factory=list)     # an import stopped mid-note: run ingest
    missing_collections: list[str] = field(default_factory=list)
    missing_indexes: list[str] = field(default_factory=list)
    unfinished_import: list[str] = field(default_factory=list)    # the last import stopped or was killed
    unembedded: int = 0        # chunks without their dense vector yet: not broken, the next import adds them

    @property
    def broken(self) -> bool:
        return bool(self.dangling_edges or self.orphan_chunks or self.missing_chunks or self.unlisted
                    or self.unfinished_notes or self.missing_collections or self.missing_indexes
                    or self.unfinished_import)

    def as_dict(self) -> dict:
        return {"ok": not self.broken, "notes": self.notes, "chunks": self.chunks, "edges": self.edges,
                "dangling_edges": self.dangling_edges, "unresolved": self.unresolved,
                "orphan_chunks": self.orphan_chunks, "missing_chunks": self.missing_chunks,
                "unlisted": self.unlisted, "unfinished_notes": self.unfinished_notes,
                "missing_collections": self.missing_collections, "missing_indexes": self.missing_indexes,
                "unfinished_import": self.unfinished_import, "unembedded": self.unembedded}


NOTE_FIELDS = ["note_id", "chunk_ids", "edge_ids", "fingerprint"]
CHUNK_FIELDS = ["chunk_id", "note_id"]
EDGE_FIELDS = ["edge_id", "note_id", "source_id", "target_id", "kind", "rule_id", "resolved", "target_text",
               "target_chunk"]
# points per engine call of check's scrolls (a command of its own, no server threads to keep running): Qdrant
# Edge 0.9 costs ~10 ms a call besides the points, so the 30,000 note records took 2.4 s in pages of 256 and
# 1.1 s in pages of 1024 (measured 2026-12-06, load 12)
PAGE = 1024


@dataclass
class _Found:
    """What the chunks and edges collections hold against what the notes list (see `check_index`)."""

    chunk_ids: set[str] = field(default_factory=set)
    orphan_chunks: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    edges: int = 0
    dangling_edges: list[dict] = field(default_factory=list)
    unresolved: list[dict] = field(default_factory=list)


def check_index(store: Store) -> IntegrityReport:
    """Read every note record and cross-check the chunks and edges against them. An embedded index whose files
    are byte for byte what mindnet last left there (`Store.verify_files`) is judged by ids and payload-index
    counts (`_by_counts`); any other, or one whose counts do not add up, by reading every chunk's and edge's
    payload (`_by_reading`: a garbled file fails there with its collection named). Both find the same
    problems in the same order."""
    report = IntegrityReport()
    report.missing_collections = [f"{store.prefix}_{k}" for k in KINDS if not store.exists(k)]
    if report.missing_collections:
        return report
    differ = store.verify_files()           # before any shard is opened (opening rewrites some files)
    if differ:
        log.info("check: %d files differ from what mindnet last wrote (%s ...): reading every payload",
                 len(differ), ", ".join(differ[:3]))
    note_chunks: dict[str, set[str]] = {}
    note_edges: dict[str, set[str]] = {}
    for r in store.scroll("notes", payload=NOTE_FIELDS, page=PAGE):
        p = r.payload
        note_chunks[p["note_id"]] = set(p.get("chunk_ids", []))
        note_edges[p["note_id"]] = set(p.get("edge_ids", []))
        if p.get("fingerprint") == "pending":
            report.unfinished_notes.append(p["note_id"])
    found = _by_counts(store, note_chunks, note_edges) if differ == [] else None
    if found is None:
        found = _by_reading(store, note_chunks, note_edges)
    report.notes, report.chunks, report.edges = len(note_chunks), len(found.chunk_ids), found.edges
    report.orphan_chunks, report.unlisted = found.orphan_chunks, found.unlisted
    report.dangling_edges, report.unresolved = found.dangling_edges, found.unresolved
    # an unfinished note's record lists the chunks it is about to write (write-ahead): absent ones are expected
    pending = set(report.unfinished_notes)
    report.missing_chunks = sorted(c for n, ids in note_chunks.items() if n not in pending
                                   for c in ids if c not in found.chunk_ids)
    missing_indexes = getattr(store, "missing_indexes", None)   # a server's (ServerStore)
    report.missing_indexes = missing_indexes() if missing_indexes is not None else []
    report.unembedded = store.count("chunks", WITHOUT_DENSE)
    token = store.read_token()
    if token == REBUILDING:
        report.unfinished_import = [f"the last full rebuild of {store.location} stopped before it had written "
                                    f"every note (searches refuse the incomplete index)"]
    elif store.folder is not None and token is None:
        # every import clears the token before its first write and sets a new one when it is done (a server
        # without collection metadata keeps no token: not checked there)
        report.unfinished_import = [f"the last import into {store.location} stopped before it finished"]
    return report


def _chunk(p: dict, note_chunks: dict[str, set[str]], found: _Found) -> None:
    found.chunk_ids.add(p["chunk_id"])
    if p.get("note_id") not in note_chunks:
        found.orphan_chunks.append(p["chunk_id"])
    elif p["chunk_id"] not in note_chunks[p["note_id"]]:
        found.unlisted.append(p["chunk_id"])


def _edge(e: dict, note_edges: dict[str, set[str]], known: set[str], found: _Found) -> None:
    if e.get("note_id") in note_edges and e["edge_id"] not in note_edges[e["note_id"]]:
        found.unlisted.append(e["edge_id"])
    if not e.get("resolved", True):
        if str(e.get("rule_id", "")).startswith(("edge_defaults", "attachment")):
            return   # a default edge repeats a link already counted; an attachment is a file, not a note
        found.unresolved.append({"note_id": e["note_id"], "target": e["target_id"], "kind": e["kind"],
                                 "text": e.get("target_text")})
    elif e["source_id"] not in known or e["target_id"] not in known or \
            (e.get("target_chunk") is not None and e["target_chunk"] not in found.chunk_ids):
        found.dangling_edges.append({k: e.get(k) for k in ("edge_id", "source_id", "target_id", "kind")})


def _by_reading(store: Store, note_chunks: dict[str, set[str]], note_edges: dict[str, set[str]]) -> _Found:
    """Every chunk's and edge's payload, read and judged one by one (75,000 chunks with their text and 660,000
    edges at 30,000 notes: the slow way, and the one that meets a garbled payload file)."""
    found = _Found()
    for r in store.scroll("chunks", payload=CHUNK_FIELDS, page=PAGE):
        _chunk(r.payload, note_chunks, found)
    known = found.chunk_ids | set(note_chunks)
    for r in store.scroll("edges", payload=EDGE_FIELDS, page=PAGE):
        found.edges += 1
        _edge(r.payload, note_edges, known, found)
    return found


def _by_counts(store: Store, note_chunks: dict[str, set[str]], note_edges: dict[str, set[str]]) -> _Found | None:
    """The same judgement for files that are as mindnet left them, reading the payloads of only the points that
    can be wrong. The chunks: by their chunk ids (a facet of that payload index): the stored ones no note lists
    are read, and the count per note (a facet) vouches that every other one is its note's. The edges: the
    count per note must be the number its note lists, and the values of their source, target and section
    (facets; without an index of the section, a filter) name the few edges read: those from or to no note or
    chunk (the unresolved links among them, as many as the facet of `resolved` counts) and those to a missing
    section. None when a count does not add up or a facet is not answered (then every payload is read)."""
    found = _Found()
    stored = store.facet("chunks", "chunk_id")          # every stored chunk id, and on how many points
    by_note = store.facet("chunks", "note_id")
    if stored is None or by_note is None or any(n != 1 for n in stored.values()):
        return None
    listed = {c: n for n, ids in note_chunks.items() for c in ids}
    extra = [c for c in stored if c not in listed]
    pages = (store.scroll("chunks", Where.field("chunk_id", *extra[i:i + 1000]), payload=CHUNK_FIELDS)
             for i in range(0, len(extra), 1000))
    extras = [r.payload for r in sorted((r for page in pages for r in page), key=lambda r: uuid.UUID(r.id).int)]
    per_note = Counter(n for c, n in listed.items() if c in stored)
    per_note.update(p.get("note_id") for p in extras)
    if per_note != Counter(by_note):
        return None
    found.chunk_ids = {c for c in listed if c in stored}
    for p in extras:
        _chunk(p, note_chunks, found)
    facets = {key: store.facet("edges", key) for key in ("note_id", "source_id", "target_id", "target_chunk",
                                                         "resolved")}
    if any(facets[k] is None for k in facets if k != "target_chunk"):
        return None
    found.edges = store.count("edges")
    if Counter({n: len(ids) for n, ids in note_edges.items() if ids}) != Counter(facets["note_id"]) or \
            sum(facets["note_id"].values()) != found.edges:
        return None          # an edge no note lists, or a listed one missing: read them all to name it
    known = found.chunk_ids | set(note_chunks)
    suspects: dict[str, dict] = {}
    if facets["target_chunk"] is None:      # a shard made before that index: the engine reads every payload
        suspects.update((r.id, r.payload) for r in store.scroll("edges", Where(present=("target_chunk",)),
                                                                payload=EDGE_FIELDS)
                        if r.payload.get("target_chunk") not in found.chunk_ids)
    for key, pool in (("source_id", known), ("target_id", known), ("target_chunk", found.chunk_ids)):
        values = [v for v in facets[key] or () if v not in pool]
        for start in range(0, len(values), 1000):
            for r in store.scroll("edges", Where.field(key, *values[start:start + 1000]), payload=EDGE_FIELDS):
                suspects[r.id] = r.payload
    if sum(p.get("resolved", True) is False for p in suspects.values()) != facets["resolved"].get(False, 0):
        return None
    for i in sorted(suspects, key=lambda i: uuid.UUID(i).int):
        _edge(suspects[i], note_edges, known, found)
    return found


# rules of edges a link wrote (not structure, type defaults or mentions)
LINK_RULE_PREFIXES = ("explicit:", "inline:", "callout:", "attachment:")
RULE_WORDS = {"path": "by path", "name": "by file name", "self": "inside this note", "id": "by id",
              "alias": "through an alias", "title": "by title", "unresolved": "unresolved"}


@dataclass
class LinkAudit:
    """What every link of a note resolved to, as `mindnet check --links` lists it."""

    path: str
    links: list[dict] = field(default_factory=list)


def link_audit(store: Store) -> list[LinkAudit]:
    """Per note (by path), each link edge: as written (`text`, `anchor`), its rule id and kind, what it resolved
    to (`target`: a path, or the normalised target of an unresolved link; `section`: the anchor when it found
    its heading or block), by which resolver rule (`by`), and how many notes shared the name it resolved by.
    One line per distinct link of a chunk (a link written twice in one chunk is one edge)."""
    if not (store.exists("notes") and store.exists("edges")):
        return []
    paths = {r.payload["note_id"]: r.payload.get("path", "")
             for r in store.scroll("notes", payload=["note_id", "path"])}
    audits: dict[str, LinkAudit] = {}
    for r in store.scroll("edges"):
        e = r.payload
        if not str(e.get("rule_id", "")).startswith(LINK_RULE_PREFIXES):
            continue
        target = str(e.get("target_id", ""))
        chunk = e.get("target_chunk")
        resolved = bool(e.get("resolved", True))
        by = e.get("resolved_by") or ("attachment" if e.get("kind") == "attachment" else
                                      "resolved" if resolved else "unresolved")
        row = {"text": e.get("target_text"), "anchor": e.get("anchor"), "rule_id": e.get("rule_id"),
               "kind": e.get("kind"), "by": by, "resolved": resolved,
               "target": paths.get(target, target) if resolved else target,
               "section": e.get("anchor") if resolved and chunk else None,
               "candidates": int(e.get("candidates") or 1), "source": e.get("source_id")}
        source = paths.get(e.get("note_id", ""), e.get("note_id", ""))
        audits.setdefault(source, LinkAudit(source)).links.append(row)
    for audit in audits.values():
        audit.links.sort(key=lambda r: (str(r["source"]), str(r["text"]), str(r["anchor"] or ""), str(r["kind"])))
    return [audits[p] for p in sorted(audits)]
