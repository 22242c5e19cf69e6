"""Graph integrity of an index: what `mindnet check` reports."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from qdrant_client import QdrantClient

from mindnet.store.collections import count_without_vector, missing_payload_indexes, names
from mindnet.store.memory import no_gc
from mindnet.store.reader import iter_payloads, read_points
from mindnet.store.snapshot import snapshot_status


def scroll_payloads(client: QdrantClient, collection: str, fields: list[str] | None = None) -> Iterator[dict]:
    """Every payload of a collection, read in one linear pass (`mindnet.store.reader`: local Qdrant's paged
    scroll is quadratic)."""
    for row in read_points(client, collection, fields=fields):
        yield row.payload


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
    unembedded: int = 0        # chunks without their dense vector yet: not broken, the next import adds them
    snapshot: str = "none"     # the in-memory mirrors' file: current | stale | missing | corrupt (rebuilt when
                               # opened, never trusted) | none (in memory or a Qdrant server)

    @property
    def broken(self) -> bool:
        return bool(self.dangling_edges or self.orphan_chunks or self.missing_chunks or self.unlisted
                    or self.unfinished_notes or self.missing_collections or self.missing_indexes)

    def as_dict(self) -> dict:
        return {"ok": not self.broken, "notes": self.notes, "chunks": self.chunks, "edges": self.edges,
                "dangling_edges": self.dangling_edges, "unresolved": self.unresolved,
                "orphan_chunks": self.orphan_chunks, "missing_chunks": self.missing_chunks,
                "unlisted": self.unlisted, "unfinished_notes": self.unfinished_notes,
                "missing_collections": self.missing_collections, "missing_indexes": self.missing_indexes,
                "unembedded": self.unembedded, "snapshot": self.snapshot}


def check_index(client: QdrantClient, prefix: str) -> IntegrityReport:
    """Read every note, chunk and edge of Qdrant once (linear, without local mode's quadratic paging) and
    cross-check them; also say whether the index snapshot is current."""
    with no_gc():
        return _check(client, prefix)


def _check(client: QdrantClient, prefix: str) -> IntegrityReport:
    coll = names(prefix)
    report = IntegrityReport()
    report.missing_collections = [n for n in coll.values() if not client.collection_exists(n)]
    if report.missing_collections:
        return report
    note_chunks: dict[str, set[str]] = {}
    note_edges: dict[str, set[str]] = {}
    for p in scroll_payloads(client, coll["notes"], ["note_id", "chunk_ids", "edge_ids", "fingerprint"]):
        note_chunks[p["note_id"]] = set(p.get("chunk_ids", []))
        note_edges[p["note_id"]] = set(p.get("edge_ids", []))
        if p.get("fingerprint") == "pending":
            report.unfinished_notes.append(p["note_id"])
    chunk_ids: set[str] = set()
    for p in scroll_payloads(client, coll["chunks"], ["chunk_id", "note_id"]):
        chunk_ids.add(p["chunk_id"])
        if p.get("note_id") not in note_chunks:
            report.orphan_chunks.append(p["chunk_id"])
        elif p["chunk_id"] not in note_chunks[p["note_id"]]:
            report.unlisted.append(p["chunk_id"])
    report.notes, report.chunks = len(note_chunks), len(chunk_ids)
    report.missing_chunks = sorted(c for ids in note_chunks.values() for c in ids if c not in chunk_ids)
    known = chunk_ids | set(note_chunks)
    for _, e in iter_payloads(client, coll["edges"]):   # read only: locally these are Qdrant's own dicts
        report.edges += 1
        if e.get("note_id") in note_edges and e["edge_id"] not in note_edges[e["note_id"]]:
            report.unlisted.append(e["edge_id"])
        if not e.get("resolved", True):
            if str(e.get("rule_id", "")).startswith(("edge_defaults", "attachment")):
                continue   # a default edge repeats a link already counted; an attachment is a file, not a note
            report.unresolved.append({"note_id": e["note_id"], "target": e["target_id"], "kind": e["kind"],
                                      "text": e.get("target_text")})
        elif e["source_id"] not in known or e["target_id"] not in known or \
                (e.get("target_chunk") is not None and e["target_chunk"] not in chunk_ids):
            report.dangling_edges.append({k: e.get(k) for k in ("edge_id", "source_id", "target_id", "kind")})
    report.missing_indexes = missing_payload_indexes(client, prefix)
    report.unembedded = count_without_vector(client, prefix)
    report.snapshot = snapshot_status(client, prefix)
    return report


# rules of edges a link wrote (not structure, type defaults or mentions)
LINK_RULE_PREFIXES = ("explicit:", "inline:", "callout:", "attachment:")
RULE_WORDS = {"path": "by path", "name": "by file name", "self": "inside this note", "id": "by id",
              "alias": "through an alias", "title": "by title", "unresolved": "unresolved"}


@dataclass
class LinkAudit:
    """What every link of a note resolved to, as `mindnet check --links` lists it."""

    path: str
    links: list[dict] = field(default_factory=list)


def link_audit(client: QdrantClient, prefix: str) -> list[LinkAudit]:
    """Per note (by path), each link edge: as written (`text`, `anchor`), its rule id and kind, what it resolved
    to (`target`: a path, or the normalised target of an unresolved link; `section`: the anchor when it found
    its heading or block), by which resolver rule (`by`), and how many notes shared the name it resolved by.
    One line per distinct link of a chunk (a link written twice in one chunk is one edge)."""
    coll = names(prefix)
    if any(not client.collection_exists(coll[k]) for k in ("notes", "edges")):
        return []
    paths = {p["note_id"]: p.get("path", "") for p in scroll_payloads(client, coll["notes"], ["note_id", "path"])}
    audits: dict[str, LinkAudit] = {}
    for _, e in iter_payloads(client, coll["edges"]):
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
