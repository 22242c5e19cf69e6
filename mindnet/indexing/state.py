"""What the index holds, note by note, kept in memory between imports and on disk as a manifest.

An entry per indexed note: the file's size and mtime (ns) when it was read, its content hash, the fingerprint
and edges hash of its record in Qdrant, and what other notes' edges depend on (its path, names, aliases and
anchors: the keys links resolve by and the names mentions find) and what its own edges depend on (the resolver
keys its links looked up, `mindnet.indexing.resolver`).
With it an import reads only files whose stat changed, and re-derives the edges of only the notes whose links or
mentions could now resolve differently, instead of reading and linking the whole vault.

The manifest is trusted only when it matches the index: each import that writes clears a token the store keeps
(`Store.read_token`: in the index folder's mindnet.json, or in a server's notes collection metadata) before its
first write, and stores a new one (the same as in the manifest file) after its last. A manifest whose token
differs (an import killed half-way, another machine's import, an index rebuilt or deleted) is ignored, and the
import plans the whole vault once more, which writes a new manifest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from mindnet.data_folder import private_dir
from mindnet.errors import VaultError
from mindnet.vault.note import read_regular_file_stat
from mindnet.vault.scan import Issue

log = logging.getLogger(__name__)
MANIFEST_VERSION = 3
RACY_NS = 2_000_000_000   # a file written this close to its reading may change again within the same mtime tick


@dataclass
class NoteEntry:
    note_id: str
    path: str
    size: int
    mtime_ns: int
    seen_ns: int                # when the file was read (time.time_ns())
    content_hash: str
    fingerprint: str            # the note record's, as written
    edges_hash: str
    title: str
    aliases: list[str]
    links: list[str]            # resolver keys its links looked up (`Resolution.lookups`, anchor keys)
    chunks: int = 0             # chunks listed by its record (report totals without reading Qdrant)
    kinds: dict[str, int] = field(default_factory=dict)      # its edges by kind
    unresolved: list[str] = field(default_factory=list)      # its unresolved link texts
    issues: list[list[Any]] = field(default_factory=list)    # its warnings, [level, message, line]
    named: list[str] = field(default_factory=list)   # mention names its text names (how common a name is)
    found: list[str] = field(default_factory=list)   # every mention name in its text, its own names too
    capped: bool = False        # it has as many mention edges as a note may: which ones depends on the order
    names: list[str] = field(default_factory=list)          # frontmatter title, first heading (link keys)
    anchors: dict[str, int] = field(default_factory=dict)   # its headings and blocks -> chunk number
    link_issues: list[list[Any]] = field(default_factory=list)   # what its links report, [level, message, line]
    link_counts: dict[str, Any] = field(default_factory=dict)    # `planning.link_counts`, for the report

    @property
    def stem(self) -> str:     # the LinkResolver and MentionIndex read notes and entries alike
        return PurePosixPath(self.path).stem

    def same_file(self, info: os.stat_result) -> bool:
        """The file's stat is the one read, and old enough that a later write cannot hide in its mtime tick."""
        return (info.st_size == self.size and info.st_mtime_ns == self.mtime_ns
                and self.seen_ns - self.mtime_ns > RACY_NS)

    def report_issues(self) -> list[Issue]:
        """The warnings found reading its file (`link_report_issues`: resolving its links)."""
        return [Issue(level, self.path, message, line) for level, message, line in self.issues]

    def link_report_issues(self) -> list[Issue]:
        return [Issue(level, self.path, message, line, kind="link") for level, message, line in self.link_issues]


ENTRY_FIELDS = [f.name for f in fields(NoteEntry)]


class IndexState:
    """The entries of every indexed note (by note id), plus the notes whose edges must be derived again because
    an import stopped before it could rewrite them (`dirty`)."""

    def __init__(self, config_key: str, entries: dict[str, NoteEntry] | None = None,
                 dirty: set[str] | None = None, vectors_complete: bool = False) -> None:
        self.config_key = config_key
        self.entries: dict[str, NoteEntry] = entries or {}
        self.dirty: set[str] = dirty or set()
        # every chunk has its dense vector (a phase 2 ended with none missing, and no chunk was written since)
        self.vectors_complete = vectors_complete
        self.texts: dict[str, tuple[str, str]] = {}   # note id -> (content hash, case-folded text): mention search
        # notes planned (their entries are here, as they will be written) but not written yet: an import stopped
        # early for newer saves, and the importer keeps their plans to write them next (in memory only). The
        # value is what the index still holds for the note (its older record, as a placeholder) or None
        self.unwritten: dict[str, NoteEntry | None] = {}
        self._links: dict[str, set[str]] | None = None

    def by_path(self) -> dict[str, NoteEntry]:
        return {e.path: e for e in self.entries.values()}

    def put(self, entry: NoteEntry) -> None:
        self.entries[entry.note_id] = entry
        self._links = None

    def drop(self, note_id: str) -> None:
        self.entries.pop(note_id, None)
        self.texts.pop(note_id, None)
        self.unwritten.pop(note_id, None)
        self._links = None

    def linking(self, keys: set[str]) -> set[str]:
        """Ids of the notes that write a link looked up by one of `keys`."""
        if self._links is None:
            self._links = {}
            for e in self.entries.values():
                for key in e.links:
                    self._links.setdefault(key, set()).add(e.note_id)
        out: set[str] = set()
        for key in keys:
            out |= self._links.get(key, set())
        return out

    def totals(self) -> tuple[int, Counter, list[tuple[str, str]]]:
        chunks, kinds, unresolved = 0, Counter(), []
        for e in self.entries.values():
            chunks += e.chunks
            kinds.update(e.kinds)
            unresolved += [(e.path, u) for u in e.unresolved]
        return chunks, kinds, unresolved

    def confirm_settled(self, vault: Path) -> int:
        """Entries read within RACY_NS of their file's last write cannot vouch for it (a later write in the same
        mtime tick would hide): the next import reads those files again, and an unchanged one loads this whole
        manifest instead of its summary (15 s against 1.5 s at 100,000 notes, after a vault written just before
        its first import). Once that tick is long past, a file whose stat and bytes are still the ones indexed
        can vouch: its entry is seen again now. A file changed since keeps its entry (the next run reads it).
        Returns how many entries were confirmed."""
        now = time.time_ns()        # before any file is read again, as a scan's `seen`
        confirmed = 0
        for e in self.entries.values():
            if (e.size < 0 or e.seen_ns - e.mtime_ns > RACY_NS or now - e.mtime_ns <= RACY_NS
                    or e.note_id in self.unwritten):
                continue
            try:     # as an import reads a note: stat from the open handle, no FIFO, no more than it indexed
                raw, info = read_regular_file_stat(vault / e.path, e.path, e.size)
            except (OSError, VaultError):
                continue
            if ((info.st_size, info.st_mtime_ns) != (e.size, e.mtime_ns)
                    or hashlib.sha256(raw).hexdigest() != e.content_hash):
                continue
            e.seen_ns = now
            confirmed += 1
        return confirmed

    # ------------------------------------------------------------------ manifest

    def save(self, path: Path, token: str) -> None:
        entries, dirty = self.entries, self.dirty
        if self.unwritten:
            # what the index holds, not what it is about to: the notes not written yet keep their older record's
            # placeholder (read again next time) or no entry (new files), and every other note's edges, derived
            # with them, are derived again by a process that finds this manifest (the plans die with this one)
            entries = {nid: e for nid, e in entries.items() if nid not in self.unwritten}
            dirty = dirty | entries.keys()
            entries |= {nid: e for nid, e in self.unwritten.items() if e is not None}
        head = {"version": MANIFEST_VERSION, "token": token, "config_key": self.config_key,
                "dirty": sorted(dirty), "vectors_complete": self.vectors_complete, "fields": ENTRY_FIELDS}
        private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                # rows, not dicts (6,500 notes in ~0.1 s), written row by row: as one string the manifest and
                # its rows took 0.53 GB more memory at the end of a 100,000-note import (268 MB on disk)
                out.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"entries":[')
                for i, e in enumerate(entries.values()):
                    out.write(("," if i else "") + json.dumps([getattr(e, f) for f in ENTRY_FIELDS],
                                                               separators=(",", ":")))
                out.write("]}")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)   # a crash leaves the old manifest or the new one, never half of one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path, token: str | None, config_key: str) -> IndexState | None:
        """The manifest at `path`, if it was written for the index whose token is `token` and the same types
        config and embedding model; None otherwise."""
        if not token:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if (data.get("version") != MANIFEST_VERSION or data.get("token") != token
                    or data.get("config_key") != config_key or data.get("fields") != ENTRY_FIELDS):
                return None
            entries = {row[0]: NoteEntry(*row) for row in data["entries"]}
            return cls(config_key, entries, set(data.get("dirty", [])), bool(data.get("vectors_complete")))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.info("manifest %s not used (%s); the import reads the whole vault", path, exc)
            return None


# the token a full rebuild leaves from the moment it dropped the index until it has written every note: a kill in
# between leaves it, and searches then say the index is incomplete instead of answering from half of it
REBUILDING = "rebuilding"


def new_token() -> str:
    return f"{time.time_ns():x}-{secrets.token_hex(6)}"
