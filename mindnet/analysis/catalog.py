"""The indexed notes as the analysis needs them: names for links and mentions, types and tags, chunk ids.

Read once from `<prefix>_notes` (without the full text) and kept until the next import; the same
`LinkResolver` and Aho-Corasick `MentionIndex` the import uses are built over it, so a suggestion names a note
exactly as the import would resolve it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

from mindnet.indexing.edges import LinkResolver
from mindnet.indexing.mentions import MentionIndex
from mindnet.settings import MentionSettings
from mindnet.store.engine import Store

FIELDS = ["note_id", "title", "names", "path", "type", "aliases", "tags", "chunk_ids"]


@dataclass(frozen=True)
class IndexedNote:
    """A note record of the index; quacks like `vault.note.Note` where LinkResolver and MentionIndex read it."""

    note_id: str
    title: str
    path: str
    type: str
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)    # frontmatter title, first heading (title: the file name)

    @property
    def stem(self) -> str:
        return PurePosixPath(self.path).stem


class Catalog:
    def __init__(self, notes: list[IndexedNote], mentions: MentionSettings) -> None:
        self.notes = {n.note_id: n for n in notes}
        self._mention_settings = mentions
        self._by_path = {n.path.casefold(): n for n in notes}

    @classmethod
    def load(cls, store: Store, mentions: MentionSettings) -> Catalog:
        if not store.exists("notes"):
            return cls([], mentions)
        notes = []
        for r in store.scroll("notes", payload=FIELDS):
            d = r.payload
            if not d.get("note_id"):
                continue
            notes.append(IndexedNote(note_id=str(d["note_id"]), title=str(d.get("title") or ""),
                                     path=str(d.get("path") or ""), type=str(d.get("type") or ""),
                                     aliases=[str(a) for a in d.get("aliases") or []],
                                     tags=[str(t) for t in d.get("tags") or []],
                                     chunk_ids=[str(c) for c in d.get("chunk_ids") or []],
                                     names=[str(n) for n in d.get("names") or []]))
        return cls(notes, mentions)

    @cached_property
    def resolver(self) -> LinkResolver:
        return LinkResolver(self.notes.values())  # type: ignore[arg-type]

    @cached_property
    def mention_index(self) -> MentionIndex:
        return MentionIndex(self.notes.values(), self._mention_settings)  # type: ignore[arg-type]

    def find(self, ref: str) -> IndexedNote | None:
        """A note by id, by vault-relative path (with or without .md), or by what a wikilink would resolve."""
        ref = ref.strip().replace("\\", "/").lstrip("/")
        if ref in self.notes:
            return self.notes[ref]
        for key in (ref, ref + ".md"):
            if key.casefold() in self._by_path:
                return self._by_path[key.casefold()]
        resolved = self.resolver.resolve(ref)
        return self.notes.get(resolved) if resolved else None

    def link_text(self, note: IndexedNote) -> str:
        """The shortest name that links to `note`: its title, else its path without .md."""
        for text in (note.title, note.path.removesuffix(".md")):
            if text and self.resolver.resolve(text) == note.note_id and not any(c in text for c in "[]|#"):
                return text
        return note.note_id
