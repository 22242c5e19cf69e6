"""Integrity of what the import wrote (notes list their chunks and edges, write-ahead records): `mindnet check`."""

from __future__ import annotations

from dataclasses import dataclass, field

from mindnet.indexing.state import REBUILDING
from mindnet.store.collections import WITHOUT_DENSE
from mindnet.store.engine import KINDS, Store


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


def check_index(store: Store) -> IntegrityReport:
    """Read every note, chunk and edge once (only the fields the checks need) and cross-check them."""
    report = IntegrityReport()
    report.missing_collections = [f"{store.prefix}_{k}" for k in KINDS if not store.exists(k)]
    if report.missing_collections:
        return report
    note_chunks: dict[str, set[str]] = {}
    note_edges: dict[str, set[str]] = {}
    for r in store.scroll("notes", payload=["note_id", "chunk_ids", "edge_ids", "fingerprint"]):
        p = r.payload
        note_chunks[p["note_id"]] = set(p.get("chunk_ids", []))
        note_edges[p["note_id"]] = set(p.get("edge_ids", []))
        if p.get("fingerprint") == "pending":
            report.unfinished_notes.append(p["note_id"])
    chunk_ids: set[str] = set()
    for r in store.scroll("chunks", payload=["chunk_id", "note_id"]):
        p = r.payload
        chunk_ids.add(p["chunk_id"])
        if p.get("note_id") not in note_chunks:
            report.orphan_chunks.append(p["chunk_id"])
        elif p["chunk_id"] not in note_chunks[p["note_id"]]:
            report.unlisted.append(p["chunk_id"])
    report.notes, report.chunks = len(note_chunks), len(chunk_ids)
    # an unfinished note's record lists the chunks it is about to write (write-ahead): absent ones are expected
    pending = set(report.unfinished_notes)
    report.missing_chunks = sorted(c for n, ids in note_chunks.items() if n not in pending
                                   for c in ids if c not in chunk_ids)
    known = chunk_ids | set(note_chunks)
    for r in store.scroll("edges", payload=["edge_id", "note_id", "source_id", "target_id", "kind", "rule_id",
                                            "resolved", "target_text", "target_chunk"]):
        e = r.payload
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
