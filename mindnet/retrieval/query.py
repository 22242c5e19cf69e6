"""The retrieval request: one model for the CLI, the HTTP API, the chat and library users."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from mindnet.errors import QueryError
from mindnet.retrieval.intent import asked_types
from mindnet.settings import RetrieverConfig

MAX_TEXT_CHARS = 2000
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
# characters one request may send to the embedding model (query or search_text, variants, hyde): embedding
# cost grows faster than length, ten 2,000-character HyDE texts took 48 s of CPU
EMBED_BUDGET_CHARS = 6000
BUILTIN_EDGE_KINDS = frozenset({"references", "depends_on", "related_to", "mentions", "supports", "contradicts",
                                "part_of", "blocks", "inspired_by", "belongs_to", "next", "prev"})


class ExpandRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)   # strict: "yes" or 1 is no boolean, "5" no count
    depth: int | None = Field(None, description="graph hops around the hits (0 = none, at most 3; "
                                                 "default: retriever.yaml expand.depth)")
    edge_types: list[str] | None = Field(None, description="edge kinds to follow (default: retriever.yaml)")


class Filters(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    note_ids: list[str] = Field(default_factory=list)
    path_prefix: str | None = None

    @field_validator("types", "tags")
    @classmethod
    def _lower(cls, values: list[str]) -> list[str]:
        """Types and tags are stored in lower case (tags without '#'), so filters match either spelling."""
        return [v.strip().lstrip("#").lower() for v in values if v.strip().lstrip("#")]

    @property
    def empty(self) -> bool:
        return not (self.types or self.tags or self.note_ids or self.path_prefix)


class QueryRequest(BaseModel):
    """`query` is what the user asked; `search_text` (if given) is searched instead; `variants` are more
    phrasings (dense + sparse), `hyde` hypothetical answers (dense only), `keywords` the sparse query."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(max_length=MAX_TEXT_CHARS)
    search_text: Text | None = None
    variants: list[Text] = Field(default_factory=list, max_length=10)
    hyde: list[Text] = Field(default_factory=list, max_length=10)
    keywords: list[Text] = Field(default_factory=list, max_length=50)
    mode: Literal["semantic", "hybrid"] | None = None
    top_k: StrictInt | None = None
    expand: ExpandRequest | None = None
    filters: Filters = Field(default_factory=Filters)
    explain: bool = True
    aggregate: Literal["sum", "max", "mean"] | None = Field(None, description="also return per-note results")
    rerank: bool | None = None
    group: Literal["note", "chunk"] | None = Field(
        None, description="note: up to top_k distinct notes, each hit its best chunk with the note's other matching "
                          "chunks as `passages`; chunk: up to top_k chunks (default: retriever.yaml group)")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty; type what you are looking for")
        return v.strip()

    @model_validator(mode="after")
    def _embedding_budget(self) -> QueryRequest:
        chars = sum(len(t) for t in self.texts()) + sum(len(h) for h in self.hyde)
        if chars > EMBED_BUDGET_CHARS:
            raise ValueError(f"the request would embed {chars} characters (query or search_text + variants + "
                             f"hyde), over the per-request budget of {EMBED_BUDGET_CHARS}; send fewer or shorter "
                             "texts")
        return self

    @classmethod
    def build(cls, **fields: Any) -> QueryRequest:
        """Construct from keyword fields; an invalid field raises QueryError naming the field."""
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            got = repr(first.get("input"))
            got = got if len(got) <= 80 else got[:77] + "..."
            raise QueryError(f"{first['msg']} (got {got})",
                             field=".".join(str(p) for p in first["loc"]) or "request") from exc

    def texts(self) -> list[str]:
        """The dense+sparse query texts: search_text (else query), then the variants, without duplicates."""
        first = (self.search_text or "").strip() or self.query
        return list(dict.fromkeys([first, *(v.strip() for v in self.variants if v.strip())]))

    def sparse_text(self, text: str) -> str:
        return " ".join(k.strip() for k in self.keywords if k.strip()) or text

    def resolved(self, config: RetrieverConfig, known_kinds: set[str],
                 type_words: Mapping[str, str] | None = None) -> ResolvedQuery:
        """Apply defaults and bounds; raise QueryError naming the field for anything out of range. `type_words`
        (word -> note type, `intent.type_vocabulary`) finds the note type a which-question asks for."""
        top_k = config.top_k if self.top_k is None else self.top_k
        if top_k < 1:
            raise QueryError(f"must be at least 1, got {top_k}", field="top_k")
        if top_k > config.max_top_k:
            raise QueryError(f"is {top_k}, above the cap of {config.max_top_k} (retriever.yaml max_top_k)",
                             field="top_k")
        mode = self.mode or config.mode
        depth = config.expand.depth if self.expand is None or self.expand.depth is None else self.expand.depth
        if not 0 <= depth <= 3:
            raise QueryError(f"must be between 0 and 3, got {depth}", field="expand.depth")
        kinds = (self.expand.edge_types if self.expand and self.expand.edge_types is not None
                 else config.expand.edge_types)
        unknown = sorted(set(kinds) - known_kinds)
        if unknown:
            raise QueryError(f"unknown edge type(s) {unknown}; known: {sorted(known_kinds)}",
                             field="expand.edge_types")
        return ResolvedQuery(request=self, mode=mode, top_k=top_k, depth=depth if mode == "hybrid" else 0,
                             group=self.group or config.group,
                             edge_types=list(kinds), rerank=config.rerank.enabled if self.rerank is None
                             else self.rerank,
                             aggregate=self.aggregate or (config.aggregation.method if config.aggregation.enabled
                                                          else None),
                             asked_types=asked_types(self.query, type_words or {}) if config.intent.enabled else [])


class ResolvedQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    request: QueryRequest
    mode: Literal["semantic", "hybrid"]
    top_k: int
    depth: int
    edge_types: list[str]
    rerank: bool
    aggregate: Literal["sum", "max", "mean"] | None = None   # per-note results: the request's, else the config's
    group: Literal["note", "chunk"] = "note"
    asked_types: list[str] = Field(default_factory=list, description="note types the question asks for "
                                                                     "(\"Which book ...?\" -> source)")
