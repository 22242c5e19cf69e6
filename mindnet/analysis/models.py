"""What an analysis returns, as data: every suggestion carries a confidence (0..1) and a one-line reason."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Span(_Frozen):
    """Where a name occurs: character offsets (Unicode code points) into the analysed text, end exclusive."""

    start: int
    end: int
    line: int = Field(description="1-based line of the analysed text")
    surface: str = Field(description="the text at [start, end), as written")


class Relation(_Frozen):
    kind: str
    confidence: float
    reason: str
    rule: Literal["cue", "type_pair", "edge_default", "fallback", "llm"]


class MentionSuggestion(_Frozen):
    """A title or alias of another note named in the text without a link (one entry per occurrence)."""

    note_id: str
    title: str
    path: str
    span: Span
    confidence: float
    reason: str


class RelatedSuggestion(_Frozen):
    """A note the search finds related and the text does not link yet; the scorer's breakdown is the reason."""

    note_id: str
    title: str
    path: str
    type: str
    score: float
    confidence: float
    reason: str
    chunk_id: str = Field(description="the note's best-matching chunk")
    score_breakdown: dict[str, Any]


class LinkSuggestion(_Frozen):
    """One link to add: mentions and related notes merged per target, typed, best first."""

    note_id: str
    title: str
    path: str
    type: str
    link_text: str = Field(description="what goes between [[ and ]] so the link resolves to this note")
    confidence: float
    reason: str
    sources: list[Literal["mention", "related"]]
    mentions: list[Span] = Field(default_factory=list, description="where the text names the note, if it does")
    relation: Relation
    callout: str = Field(description="the `> [!edge] KIND: [[X]]` line for the end of the note")


class TypeSuggestion(_Frozen):
    value: str
    confidence: float
    reason: str
    current: str | None = Field(None, description="the type the text has now (frontmatter or path)")


class TagSuggestion(_Frozen):
    tag: str
    confidence: float
    reason: str


class DuplicateSuggestion(_Frozen):
    note_id: str
    title: str
    path: str
    similarity: float
    confidence: float
    reason: str


class SourceInfo(_Frozen):
    kind: Literal["draft", "note"]
    title: str
    note_id: str | None = Field(None, description="the indexed note analysed (or the one a draft would replace)")
    path: str | None = None
    type: str
    linked: list[str] = Field(default_factory=list, description="note ids the text already links to")
    chunks: int
    embedded: int = Field(description="chunks embedded for this call (the rest came from the index or cache)")


class AnalysisResult(_Frozen):
    source: SourceInfo
    links: list[LinkSuggestion]
    mentions: list[MentionSuggestion]
    related: list[RelatedSuggestion]
    type: TypeSuggestion | None
    tags: list[TagSuggestion]
    duplicate: DuplicateSuggestion | None
    llm: dict[str, Any] = Field(default_factory=dict, description="whether the LLM refined the kinds, and why not")
    warnings: list[str] = Field(default_factory=list, description="what the import would warn about in this text")
    timing_ms: dict[str, float] = Field(default_factory=dict)
