"""The text under analysis: a Markdown draft, or a note of the vault named by id or path.

Both become a parsed `Note` and its chunks, exactly as the import would make them, plus the note ids the text
already links to (resolved like the import resolves them) and the note's own id when the index holds it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from llama_index.core.schema import TextNode

from mindnet.analysis.catalog import Catalog, IndexedNote
from mindnet.errors import InputTooLargeError, NoteNotFoundError, QueryError, VaultError
from mindnet.indexing.node_parser import MarkdownNoteParser
from mindnet.settings import Settings
from mindnet.vault.links import extract_links
from mindnet.vault.note import Note, parse_note

DRAFT_NAME = "draft.md"


@dataclass
class AnalysisSource:
    kind: str                  # "draft" | "note"
    text: str                  # the analysed text (line endings "\n", NFC): offsets point into it
    body_offset: int           # where the note body starts in `text` (after the frontmatter)
    note: Note
    nodes: list[TextNode]
    indexed: IndexedNote | None   # the note itself, when the index holds it
    linked: set[str]           # note ids the text links to (resolved), the note itself excluded

    @property
    def excluded(self) -> set[str]:
        """Never suggested: the note itself and what it already links to."""
        return self.linked | ({self.indexed.note_id} if self.indexed else set())


def normalise(text: str) -> str:
    """The import's normalisation (BOM, line endings, NFC), so offsets match what is parsed."""
    return unicodedata.normalize("NFC", text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))


def body_offset(text: str, body_line: int) -> int:
    return sum(len(line) + 1 for line in text.split("\n")[: body_line - 1])


def _vault_path(path: str | None, settings: Settings) -> str:
    """A draft's place in the vault (for path rules and self-recognition); defaults to draft.md."""
    if not path:
        return DRAFT_NAME
    rel = path.strip().replace("\\", "/").lstrip("/")
    parts = PurePosixPath(rel).parts
    if not rel or any(p == ".." for p in parts):
        raise QueryError(f"{path!r} is not a vault-relative path; write it like 'projects/new-idea.md'",
                         field="path")
    return rel if rel.lower().endswith(".md") else f"{rel.rstrip('/')}/{DRAFT_NAME}"


def check_size(text: str, limit: int, settings: Settings) -> None:
    size = len(text.encode("utf-8"))
    if size > limit:
        raise InputTooLargeError(
            f"the text is {size:,} bytes, over the analyze limit of {limit:,} bytes; analyse a shorter part "
            f"or raise max_text_bytes in {settings.analysis_path}", field="text")


def draft_source(text: str, *, settings: Settings, catalog: Catalog, parser: MarkdownNoteParser,
                 path: str | None = None, note_type: str | None = None) -> AnalysisSource:
    check_size(text, settings.analysis.max_text_bytes, settings)
    if not text.strip():
        raise QueryError("must not be empty; send the draft's Markdown text", field="text")
    text = normalise(text)
    rel = _vault_path(path, settings)
    if note_type is not None and note_type not in settings.types.types:
        raise QueryError(f"unknown type {note_type!r}; known: {', '.join(sorted(settings.types.types))}",
                         field="note_type")
    try:
        note = parse_note(text.encode("utf-8"), rel, settings.types)
    except VaultError as exc:   # broken frontmatter: the user's input, so a 422 naming the line
        raise QueryError(str(exc), field="text") from exc
    if note_type is not None:
        note.type = note_type
    if PurePosixPath(rel).name == DRAFT_NAME and not note.frontmatter.get("title"):
        note.title = note.title if note.title != "draft" else "Draft"
    # the draft of an indexed note (same id, or saved at its path) must not be suggested to itself
    indexed = catalog.notes.get(note.note_id) if note.frontmatter.get("id") else None
    indexed = indexed or (catalog.find(rel) if path else None)
    return _finish("draft", text, note, indexed, catalog, parser)


def note_source(ref: str, *, settings: Settings, catalog: Catalog, parser: MarkdownNoteParser) -> AnalysisSource:
    if not ref.strip():
        raise QueryError("must not be empty; give a note id or a vault-relative path", field="note")
    indexed = catalog.find(ref)
    if indexed is None:
        raise NoteNotFoundError(f"no note with id or path {ref!r} in the index; check the spelling, or import "
                                f"the vault first (`mindnet ingest`)")
    file = Path(settings.vault_root) / indexed.path
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise NoteNotFoundError(f"{indexed.path}: in the index but not readable in the vault "
                                f"({type(exc).__name__}); run `mindnet ingest` to update the index") from exc
    text = normalise(raw.decode("utf-8", errors="replace"))
    try:
        note = parse_note(raw, indexed.path, settings.types)
    except VaultError as exc:
        raise QueryError(str(exc), field="note") from exc
    return _finish("note", text, note, indexed, catalog, parser)


def _finish(kind: str, text: str, note: Note, indexed: IndexedNote | None, catalog: Catalog,
            parser: MarkdownNoteParser) -> AnalysisSource:
    own = indexed.note_id if indexed else note.note_id
    linked = {t for t in (catalog.resolver.resolve(ref.target) for ref in extract_links(note.body)) if t} - {own}
    return AnalysisSource(kind=kind, text=text, body_offset=body_offset(text, note.body_line), note=note,
                          nodes=parser.note_to_nodes(note), indexed=indexed, linked=linked)
