"""The agent tools as a model sees them: name, title, description, input model, whether a tool writes; and
`tool_error`, which words a failed call for the model. `mindnet.agents.tools.VaultTools` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mindnet.agents.models import (
    AddLinksInput,
    AppendInput,
    ReadNoteInput,
    RecentChangesInput,
    RelatedInput,
    SearchInput,
    SuggestLinksInput,
    ToolInput,
    WriteNoteInput,
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what a model reads about it, its input model, and whether it writes."""

    name: str
    title: str
    description: str
    model: type[ToolInput]
    writes: bool = False
    destructive: bool = False      # may replace text the user wrote (a backup is kept)

    def input_schema(self) -> dict[str, Any]:
        return self.model.model_json_schema()


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("search", "Search the notes", (
        "Search the user's notes (an Obsidian-style Markdown vault) by meaning, keywords and links. Use it first "
        "for any question the notes may answer. Returns up to top_k notes, best first, each with its vault path, "
        "title, type, score, the best matching passage and a one-line reason why it matched. Filter by types, "
        "tags or folder. Cite notes by their path; read a whole note with read_note."), SearchInput),
    ToolSpec("read_note", "Read a note", (
        "Read one note by its vault path, id, title or alias. Returns its Markdown, frontmatter, tags, aliases, "
        "its `version` (needed to change it safely) and its links: outgoing (with kind, target and whether it "
        "resolved) and incoming (which notes point to it). An unknown note answers with the closest names."),
        ReadNoteInput),
    ToolSpec("related", "Notes linked around a note or question", (
        "The link graph around a note (or around the best notes for a query): the notes up to `depth` hops away "
        "with their distance, and the typed links between them as data (source, target, kind, rule, confidence). "
        "Only links the import resolved exactly (wikilinks, Markdown links, typed relations, mentions); no "
        "guessing. Use it to build context before answering or writing."), RelatedInput),
    ToolSpec("suggest_links", "Suggest links for a note or draft", (
        "Save & Analyze: for an indexed note or a Markdown draft, the notes it should link to (typed, with "
        "confidence and the reason), its likely type and tags, and near-duplicates. Reads only; nothing is "
        "written. Apply chosen links with add_links."), SuggestLinksInput),
    ToolSpec("write_note", "Create a note", (
        "Create a new note in the vault from Markdown and import it at once, so search finds it in the next call; "
        "the answer lists its links and whether each resolved. The file name comes from the title, the folder "
        "from the type. An existing note is never replaced unless overwrite is true and replaces gives the "
        "version you read; the replaced text is kept as a backup. Notes are only written inside the vault."),
        WriteNoteInput, writes=True, destructive=True),
    ToolSpec("append_to_note", "Append to a note", (
        "Append Markdown at the end of an existing note (nothing else in it changes) and re-import it. The old "
        "text is kept as a backup; pass the version from read_note so an edit the user made since is not "
        "overwritten."), AppendInput, writes=True, destructive=True),
    ToolSpec("add_links", "Add typed links to a note", (
        "Add typed links from a note to other notes: one `> [!edge]` callout block appended at the end of the "
        "note (one line per kind), a backup kept, the note re-imported. Targets must be existing notes; an "
        "unknown target answers with the closest names."), AddLinksInput, writes=True, destructive=True),
    ToolSpec("recent_changes", "Recently changed notes", (
        "The notes changed since a time (by their file's modification time, from the index), newest first, with "
        "path, title, type and when. Says whether the index is still importing changes."), RecentChangesInput),
)
SPEC_BY_NAME = {s.name: s for s in SPECS}


def tool_error(exc: Exception, public: Callable[[str], str] = str) -> str:
    """An error as the model reads it: what went wrong and what to do (absolute server paths hidden)."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        if first["type"] == "string_too_short" and (first.get("ctx") or {}).get("min_length") == 1:
            return f"invalid arguments: {where}: must not be empty"
        if first["type"] == "missing":
            return f"invalid arguments: {where} is required"
        return f"invalid arguments: {where}: {first['msg']}"
    return public(str(exc))
