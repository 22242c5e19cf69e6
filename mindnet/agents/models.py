"""The agent tools' inputs: strict models whose JSON schemas and field descriptions are what a model reads.

Limits are part of the schema (a model sees them before it calls), and the same models check the call again
(`VaultTools.call`), so a client that skips schema validation gets the same answer.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator
from pydantic.json_schema import SkipJsonSchema

# An optional field is typed in the schema as what it takes ({"type": "string"}), without the `anyOf ... null`
# of `str | None`: Ollama's client drops `anyOf`, so a local model saw such a field with no type at all. None
# still validates (a client may send null), and leaving the field out keeps its default.
Unset = SkipJsonSchema[None]
Version = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]

NoteRef = Field(min_length=1, max_length=1000, description=(
    "the note: its vault path ('concepts/qdrant.md'), its id, its title or one of its aliases"))


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _exactly_one(first: str | None, second: str | None, message: str) -> None:
    if bool((first or "").strip()) == bool((second or "").strip()):
        raise ValueError(message)


class SearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=2000, description="what to look for, in the user's words")
    mode: Literal["semantic", "hybrid"] | Unset = Field(
        None, description="hybrid (default): meaning + keywords + the link graph; semantic: meaning only")
    top_k: StrictInt = Field(8, ge=1, le=50, description="notes to return")
    types: list[str] = Field(default_factory=list, max_length=20,
                             description="only notes of these types (e.g. concept, decision, project)")
    tags: list[str] = Field(default_factory=list, max_length=20, description="only notes with one of these tags")
    folder: Annotated[str, Field(max_length=500)] | Unset = Field(None, description=(
        "only notes below this vault folder"))
    depth: Annotated[StrictInt, Field(ge=0, le=3)] | Unset = Field(None, description=(
        "link hops the search follows from its best hits (0: none; default: the configured depth)"))


class ReadNoteInput(ToolInput):
    note: str = NoteRef
    max_chars: StrictInt = Field(20_000, ge=100, le=500_000, description=(
        "the Markdown is cut after this many characters (`truncated` says so)"))


class RelatedInput(ToolInput):
    note: Annotated[str, Field(max_length=1000)] | Unset = Field(None, description=(
        "start from this note (path, id, title or alias); give `note` or `query`"))
    query: Annotated[str, Field(max_length=2000)] | Unset = Field(None, description=(
        "start from the best notes for this question"))
    depth: StrictInt = Field(1, ge=1, le=3, description="link hops from the start")
    edge_kinds: list[str] = Field(default_factory=list, max_length=20, description=(
        "follow only these link kinds (e.g. references, depends_on, related_to, mentions); default: all"))
    limit: StrictInt = Field(30, ge=1, le=200, description="notes returned, nearest and strongest first")

    @model_validator(mode="after")
    def _one_start(self) -> RelatedInput:
        _exactly_one(self.note, self.query, "give exactly one of `note` (a note to start from) or `query` (a question)")
        return self


class SuggestLinksInput(ToolInput):
    note: Annotated[str, Field(max_length=1000)] | Unset = Field(None, description=(
        "an indexed note to analyse (path, id or title)"))
    text: str | Unset = Field(None, description="or a Markdown draft to analyse (nothing is saved)")
    limit: StrictInt = Field(10, ge=1, le=50, description="link suggestions returned")
    llm: StrictBool = Field(False, description="let the local LLM choose relation kinds (slower); default: rules")

    @model_validator(mode="after")
    def _one_source(self) -> SuggestLinksInput:
        _exactly_one(self.note, self.text, "give exactly one of `note` (an indexed note) or `text` (a draft)")
        return self


class WriteNoteInput(ToolInput):
    markdown: str = Field(min_length=1, description=(
        "the whole note: optional YAML frontmatter (title, type, tags, aliases, ...) and the Markdown body; "
        "the title (frontmatter or first heading) names the file; [[wikilinks]] to other notes are resolved"))
    note_type: Annotated[str, Field(max_length=100)] | Unset = Field(None, description=(
        "the note's type (it decides the folder); default: the frontmatter's `type`, else the vault's default"))
    overwrite: StrictBool = Field(False, description=(
        "replace an existing note of the same name; needs `replaces`; the old text is kept as a backup"))
    replaces: Version | Unset = Field(None, description=(
        "with overwrite: the `version` of the note you replace (read_note or the refusal gives it); a note "
        "changed since is not overwritten"))


class AppendInput(ToolInput):
    note: str = NoteRef
    markdown: str = Field(min_length=1, description="the text appended at the end of the note (Markdown)")
    version: Version | Unset = Field(None, description=(
        "the note's `version` as you read it: refused if the note changed since (recommended)"))


class LinkToAdd(ToolInput):
    target: str = Field(min_length=1, max_length=1000, description="the note to link to (path, id, title, alias)")
    kind: str = Field("related_to", min_length=1, max_length=100, description=(
        "the relation: references, related_to, depends_on, supports, contradicts, part_of, blocks, inspired_by"))


class AddLinksInput(ToolInput):
    note: str = NoteRef
    links: list[LinkToAdd] = Field(min_length=1, max_length=50, description="the typed links to add")
    version: Version | Unset = Field(None, description=(
        "the note's `version` as you read it: refused if the note changed since"))


class RecentChangesInput(ToolInput):
    since: str = Field("24h", max_length=40, description=(
        "an ISO date or time ('2026-11-30', '2026-11-30T08:00:00Z') or a span back from now ('90m', '24h', '7d')"))
    limit: StrictInt = Field(50, ge=1, le=500, description="notes returned, newest first")
