"""The YAML config files as strict models: types.yaml, retriever.yaml, decision_engine.yaml, analysis.yaml.

Every YAML file is parsed once into a pydantic model that rejects unknown keys; a bad file raises a
`ConfigError` naming the file and the key path, e.g. ``config/retriever.yaml: scoring.edge_weight: ...``.
Where the files are found (and the environment settings) is `mindnet.settings`, which re-exports these names.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mindnet.errors import ConfigError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- types.yaml


class ChunkStrategy(StrEnum):
    SLIDING = "sliding"        # pack paragraphs up to target size, heading changes preferred as cuts
    BY_HEADING = "by_heading"  # one chunk per heading section (split further only when too long)


class ChunkProfile(Strict):
    strategy: ChunkStrategy = Field(ChunkStrategy.SLIDING,
                                    description="sliding: pack paragraphs up to the target size; by_heading: one "
                                                "chunk per heading section")
    target_words: int = Field(200, ge=10, le=5000, description="aim for chunks of about this many words")
    max_words: int = Field(300, ge=10, le=10000, description="never exceed this (except a single code block/table)")
    overlap_words: int = Field(30, ge=0, le=1000, description="words of the previous chunk prepended to `window`")

    @model_validator(mode="after")
    def _sizes(self) -> ChunkProfile:
        if self.max_words < self.target_words:
            raise ValueError(f"max_words ({self.max_words}) must be >= target_words ({self.target_words})")
        return self


class TypeSpec(Strict):
    chunk_profile: str = Field("medium", description="name of the chunk profile (chunk_profiles) of this type's notes")
    edge_defaults: list[str] = Field(default_factory=list,
                                     description="relation kinds added to every explicit link of this type's notes")
    retriever_weight: float = Field(1.0, ge=-10, le=10,
                                    description="W_type: multiplies the 0..1 semantic score of this type's notes")
    paths: list[str] = Field(default_factory=list, description="glob patterns (vault-relative) selecting this type")
    aliases: list[str] = Field(default_factory=list, description="other names of the type, e.g. for the interview")
    folder: str | None = Field(None, description="vault folder where new notes of this type are saved")


class MentionSettings(Strict):
    enabled: bool = Field(True, description="make mention edges")
    min_title_length: int = Field(4, ge=1, le=100, description="shorter names never make a mention edge")
    confidence: float = Field(0.4, ge=0, le=1, description="confidence of a mention edge")
    max_per_chunk: int = Field(20, ge=1, le=1000, description="mention edges per chunk at most")
    max_per_note: int = Field(30, ge=1, le=100000, description="mention edges per source note, most specific first")
    max_note_share: float = Field(0.03, gt=0, le=1, description="a name in more than this share of notes is common")
    common_min_notes: int = Field(20, ge=1, description="... and in more than this many notes")
    common_max_notes: int | None = Field(300, ge=1, description="a name in more than this many notes is common, "
                                                                "whatever the share (null: no ceiling)")
    common_damping: float = Field(0.0, ge=0, le=1, description="confidence factor of a common name (0: no edge)")
    short_title_chars: int = Field(6, ge=0, le=100, description="a name shorter than this many characters")
    short_title_words: int = Field(2, ge=1, le=100, description="... and fewer words than this is short")
    short_damping: float = Field(0.5, ge=0, le=1, description="confidence factor of a short name (0: no edge)")


class IndexNoteSettings(Strict):
    """Index-note detection at import (see mindnet/vault/index_notes.py): a note without a frontmatter type
    whose body is mostly links gets type `type` (its low retriever_weight damps it in every search)."""

    enabled: bool = Field(True, description="detect index notes at import")
    type: str = Field("index", description="the type index notes get; must be defined under types")
    min_links: int = Field(8, ge=1, description="distinct links an index note has at least")
    min_link_lines: float = Field(0.6, ge=0, le=1, description="share of its text lines that are link items")
    max_item_words: int = Field(8, ge=0, description="words outside the links a link item may have")
    tags: list[str] = Field(default_factory=lambda: ["moc", "index"],
                            description="tags that make a note an index note whatever its body")


class EdgeConfidence(Strict):
    wikilink: float = Field(1.0, ge=0, le=1, description="a wikilink [[Note]]")
    markdown: float = Field(1.0, ge=0, le=1, description="a Markdown link [text](Note.md) to a note")
    embed: float = Field(1.0, ge=0, le=1, description="an embed ![[Note]] or ![alt](Note.md)")
    inline_rel: float = Field(0.95, ge=0, le=1, description="an inline relation [[rel:KIND Note]]")
    callout: float = Field(0.9, ge=0, le=1, description="a typed link in a > [!edge] callout")
    default_edge: float = Field(0.7, ge=0, le=1,
                                description="a type's default edge on an explicit link (stored as an extra kind of "
                                            "the link's edge)")
    structural: float = Field(1.0, ge=0, le=1, description="next/prev/belongs_to edges of the note's structure")


class TypesConfig(Strict):
    default_type: str = Field("concept", description="type of a note whose frontmatter and path rules name none")
    exclude: list[str] = Field(default_factory=list, description="vault-relative globs never imported")
    max_file_bytes: int = Field(2_000_000, ge=1, description="larger files are skipped with a report line")
    max_tags: int = Field(1000, ge=1, description="tags kept per note (each chunk carries them); more are "
                                                  "dropped with a warning")
    note_budget_seconds: float = Field(20.0, gt=0, description="CPU seconds the import spends reading and "
                                       "linking one note; past them it keeps the note as far as it was read")
    chunk_profiles: dict[str, ChunkProfile] = Field(
        description="chunk profiles by name (sizes in words; `window` = overlap + text)")
    types: dict[str, TypeSpec] = Field(
        description="note types by name: chunk profile, default edges, retriever weight, path rules")
    mentions: MentionSettings = Field(MentionSettings(),
                                      description="unlinked mentions: a chunk names another note's title or alias "
                                                  "without a link")
    confidence: EdgeConfidence = Field(EdgeConfidence(), description="confidence of each edge rule")
    index_notes: IndexNoteSettings = Field(IndexNoteSettings(), description="index-note (MOC) detection at import")

    def index_type(self) -> str | None:
        """The type detected index notes get, or None when detection is off (or the type is not defined)."""
        cfg = self.index_notes
        return cfg.type if cfg.enabled and cfg.type in self.types else None

    @model_validator(mode="after")
    def _references(self) -> TypesConfig:
        if self.default_type not in self.types:
            raise ValueError(f"default_type '{self.default_type}' is not defined under types")
        # a types.yaml written before index notes existed has no such type: detection is off for it
        if "index_notes" in self.model_fields_set and self.index_notes.enabled and \
                self.index_notes.type not in self.types:
            raise ValueError(f"index_notes.type '{self.index_notes.type}' is not defined under types (add it, "
                             f"or set index_notes.enabled: false)")
        for name, spec in self.types.items():
            if spec.chunk_profile not in self.chunk_profiles:
                raise ValueError(
                    f"types.{name}.chunk_profile '{spec.chunk_profile}' is not one of "
                    f"{sorted(self.chunk_profiles)}")
        return self


# --------------------------------------------------------------------------- retriever.yaml


class ScoringWeights(Strict):
    semantic_weight: float = Field(1.0, ge=0,
                                   description="W_sem: weight of the semantic score S_sem (0..1, times max(W_type, 0))")
    edge_weight: float = Field(0.7, ge=0, description="W_edge: weight of the edge evidence B_edge (0..1)")
    centrality_weight: float = Field(0.5, ge=0, description="W_cent: weight of the centrality bonus B_cent (0..1)")


class ExpandSettings(Strict):
    depth: int = Field(1, ge=0, le=3, description="graph hops (0: no graph expansion)")
    seeds: int = Field(10, ge=1, le=200, description="top candidates whose notes seed the graph expansion")
    edge_types: list[str] = Field(default_factory=lambda: ["references", "depends_on", "related_to", "mentions"],
                                  description="edge kinds the expansion follows")
    max_nodes: int = Field(400, ge=1, description="cap on graph-only candidates scored per query")
    max_edges_per_note: int | None = Field(
        25, ge=1, description="fan-out per note and hop: only its strongest links (by confidence) are followed")
    max_edges: int | None = Field(1000, ge=1, description="edges one query's expansion loads over all hops, "
                                                          "strongest first (nearer hops first); null: no cap")


class GraphSettings(Strict):
    hub_degree: float = Field(10.0, gt=0, description="distinct links a note may have before each counts less: "
                                                       "weight min(1, sqrt(hub_degree / links))")
    chance: float = Field(0.0, ge=0, le=1, description="share of the chance-expected linkers (K x in / N) "
                                                         "subtracted in B_edge")
    near_share: float = Field(0.95, gt=0, le=1, description="a note the graph lifts may pass the better hit that "
                                                            "led to it when its own semantic term reaches this share "
                                                            "of that hit's (1: only an equal match)")


class HybridSettings(Strict):
    dense_prefetch: int = Field(50, ge=1, le=1000, description="dense candidates fetched before fusion")
    sparse_prefetch: int = Field(50, ge=1, le=1000, description="BM25 candidates fetched before fusion")
    alpha: float = Field(0.5, ge=0, le=1, description="share of the dense score in the fused semantic score")
    language_fair: bool = Field(True, description="a chunk in another language than the question is not pushed "
                                "down by BM25 (which cannot match across languages): its lexical share counts at "
                                "least as much as its dense share")


class DenseSettings(Strict):
    exact_below: int = Field(300_000, ge=0, description="chunks up to which dense search is exact (a full scan: the "
                                                         "same hits every time); above, HNSW")
    hnsw_ef: int = Field(256, ge=1, le=10_000, description="HNSW search breadth above exact_below")


class RerankSettings(Strict):
    enabled: bool = Field(False, description="rerank the head of the results")
    limit: int = Field(20, ge=1, le=200, description="only this many hits are reranked; the tail stays below them")


class AggregationSettings(Strict):
    enabled: bool = Field(False, description="aggregate a note's chunk scores")
    method: Literal["sum", "max", "mean"] = Field("max", description="how: sum, max or mean of a note's chunk scores")


class IntentSettings(Strict):
    enabled: bool = Field(True, description="weigh notes by the note type a which-question asks for")
    other_types_weight: float = Field(0.5, ge=0, le=1, description="W_type factor of the notes of other types "
                                                                  "when a question asks for a type")


class RetrieverConfig(Strict):
    mode: Literal["semantic", "hybrid"] = Field("hybrid",
                                                description="default search mode: semantic (vectors) or hybrid "
                                                            "(vectors + BM25 + graph)")
    group: Literal["note", "chunk"] = Field("note", description="note: top_k distinct notes, each with its best "
                                                                 "chunk and other matching passages; chunk: chunks")
    top_k: int = Field(10, ge=1, description="hits returned when a request names none")
    max_top_k: int = Field(50, ge=1, description="hard cap on top_k for every request")
    scoring: ScoringWeights = Field(ScoringWeights(), description="weights of the score's terms")
    expand: ExpandSettings = Field(ExpandSettings(), description="graph expansion around the best hits")
    graph: GraphSettings = Field(GraphSettings(),
                                 description="hub damping, chance correction and the lift cap of the graph terms")
    hybrid: HybridSettings = Field(HybridSettings(), description="fusion of dense and BM25 scores")
    dense: DenseSettings = Field(DenseSettings(), description="Qdrant's dense search: exact or HNSW")
    rerank: RerankSettings = Field(RerankSettings(), description="optional reranking of the head")
    aggregation: AggregationSettings = Field(AggregationSettings(),
                                             description="optional note-level aggregation of chunk scores")
    intent: IntentSettings = Field(IntentSettings(), description="the note type a which-question asks for")


# --------------------------------------------------------------------------- decision_engine.yaml


class RetrievalSettings(Strict):
    mode: Literal["semantic", "hybrid"] = Field("hybrid", description="search mode of this strategy")
    top_k: int = Field(5, ge=1, le=50, description="hits retrieved")
    expand_depth: int = Field(1, ge=0, le=3, description="graph hops around the hits")
    inject_top_k: int = Field(3, ge=1, le=50, description="hits of each inject_types type added to the context")


class Strategy(Strict):
    description: str = Field(description="what the strategy is for; the LLM router reads it")
    trigger_keywords: list[str] = Field(default_factory=list,
                                        description="words or phrases that pick this strategy (the longest, most "
                                                    "specific match wins)")
    inject_types: list[str] = Field(default_factory=list,
                                    description="note types whose best hits are added to the context")
    prompt: str = Field(description="name of the prompt template under prompts/ (without .md)")
    retrieval: RetrievalSettings | None = Field(None, description="absent: the strategy does not retrieve")


class SchemaField(Strict):
    name: str
    description: str = ""


class InterviewSchema(Strict):
    aliases: list[str] = Field(default_factory=list, description="words that name this type in a message")
    required: list[str] = Field(default_factory=list, description="frontmatter fields that must be filled")
    optional: list[str] = Field(default_factory=list, description="frontmatter fields that may be filled")
    sections: list[str] = Field(default_factory=list, description="body sections (## headings) of the note")


class DecisionEngineConfig(Strict):
    default_strategy: str = Field("FACT",
                                  description="strategy when no trigger keyword matches and the LLM router is off or "
                                              "unsure")
    llm_fallback_enabled: bool = Field(True, description="when no keyword matches, let the LLM classify the message")
    router_prompt: str = Field("router", description="prompt template of the LLM router (prompts/<name>.md)")
    strategies: dict[str, Strategy] = Field(
        description="the chat's strategies by name (FACT, DECISION, EMPATHY, CODING, INTERVIEW)")
    schemas: dict[str, InterviewSchema] = Field(default_factory=dict,
                                                description="interview schemas by note type: what a drafted note of "
                                                            "that type holds")

    @model_validator(mode="after")
    def _default_known(self) -> DecisionEngineConfig:
        if self.default_strategy not in self.strategies:
            raise ValueError(f"default_strategy '{self.default_strategy}' is not one of {sorted(self.strategies)}")
        return self


# --------------------------------------------------------------------------- analysis.yaml


class AnalysisMentions(Strict):
    confidence: float = Field(0.6, ge=0, le=1, description="one unambiguous unlinked mention")
    repeat_bonus: float = Field(0.05, ge=0, le=0.2, description="per further occurrence, up to +0.2")


class AnalysisRelated(Strict):
    mode: Literal["semantic", "hybrid"] = Field("hybrid", description="search mode for related notes")
    depth: int = Field(2, ge=0, le=3,
                       description="graph hops around the best candidates (2: the neighbours of what the text links)")
    candidates: int = Field(200, ge=10, le=2000, description="chunks ranked before grouping by note")
    max_confidence: float = Field(0.7, ge=0, le=1,
                                  description="the best related note's confidence; the others in proportion to their "
                                              "score")
    max_chunks: int = Field(4, ge=1, le=200, description="chunks of a draft embedded at most (spread evenly)")
    max_words: int = Field(100, ge=10, le=2000, description="words of each such chunk embedded at most")


class AnalysisNeighbours(Strict):
    count: int = Field(8, ge=1, le=100, description="nearest notes (by dense similarity) that suggest type and tags")
    min_tag_share: float = Field(0.3, ge=0, le=1,
                                 description="a tag needs this share of the neighbours' similarity weight")
    max_tags: int = Field(5, ge=0, le=50, description="tags suggested at most")


class AnalysisDuplicates(Strict):
    threshold: float = Field(0.95, ge=0, le=1,
                             description="the text's chunks match a note's at this mean cosine or more (and it is "
                                         "0.5x to 2x as long)")
    candidates: int = Field(3, ge=1, le=50, description="nearest notes compared chunk by chunk")


class TypePairRule(Strict):
    source: str = Field(description="type of the analysed text, or * for any")
    target: str = Field(description="type of the suggested note, or * for any")
    kind: str = Field(description="relation kind suggested for this pair of types")


class AnalysisRelations(Strict):
    llm: Literal["auto", "off"] = Field("auto",
                                        description="auto: refine the rule-based kinds when Ollama is reachable; off: "
                                                    "rules only")
    window_chars: int = Field(120, ge=0, le=2000,
                              description="cue phrases are looked for this far before a mention, in its sentence")
    cues: dict[str, list[str]] = Field(default_factory=dict, description="relation kind -> cue phrases")
    type_pairs: list[TypePairRule] = Field(default_factory=list,
                                           description="no cue near: the kind by the types of both ends")

    @field_validator("cues")
    @classmethod
    def _phrases(cls, cues: dict[str, list[str]]) -> dict[str, list[str]]:
        for kind, phrases in cues.items():
            if any(not p.strip() for p in phrases):
                raise ValueError(f"cues.{kind} holds an empty phrase; remove it")
        return cues


class AnalysisConfig(Strict):
    max_text_bytes: int = Field(200_000, ge=1, description="a larger draft is refused (HTTP 413) with this limit named")
    limit: int = Field(10, ge=1, le=100,
                       description="link suggestions returned (mentions and related notes merged, best first)")
    min_confidence: float = Field(0.15, ge=0, le=1, description="link suggestions below this confidence are dropped")
    mentions: AnalysisMentions = Field(AnalysisMentions(),
                                       description="titles and aliases named in the text without a link")
    related: AnalysisRelated = Field(AnalysisRelated(),
                                     description="related notes: hybrid search with the text's chunks, then graph "
                                                 "context")
    neighbours: AnalysisNeighbours = Field(AnalysisNeighbours(), description="type and tags from the nearest notes")
    duplicates: AnalysisDuplicates = Field(AnalysisDuplicates(), description="possible duplicates of the text")
    relations: AnalysisRelations = Field(AnalysisRelations(), description="the relation kind of each suggested link")


# --------------------------------------------------------------------------- loading


M = TypeVar("M", bound=BaseModel)


def _format_validation_error(path: Path, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{path}: unknown key '{loc}'; remove it or check its spelling")
        else:
            lines.append(f"{path}: {loc}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def load_yaml_model(path: Path, model: type[M]) -> M:
    """Parse one YAML file into `model`; every problem becomes a ConfigError naming file and key."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: config file not found; set the matching MINDNET_*_CONFIG or create it") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(path, exc)) from exc
