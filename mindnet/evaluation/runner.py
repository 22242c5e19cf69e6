"""`mindnet eval`: import a BEIR-layout benchmark as a vault and measure retrieval quality and latency.

The corpus is written as a vault (one note per document, note id = document id) into a work folder
(default ``./data/eval/<dataset>-<embedding>/``) and imported through the real pipeline into that folder's own
local Qdrant and embedding cache, so a second run re-uses the vectors and skips the import work.
The eval vault gets its own types config (a copy of the user's, plus a type `eval_doc` whose profile keeps a
document in one chunk and whose retriever weight is 1): BEIR documents are the retrieval unit, and the
published baselines embed each document once (the model truncates long ones).

Every test query runs in each mode (`semantic`, `hybrid-nograph` = hybrid at expand depth 0, `hybrid` = the
configured depth) and through a plain LlamaIndex `VectorIndexRetriever` over the same collection and embedding
model (`plain`), interleaved query by query, so latency ratios are measured under the same machine load.
Chunk hits map to document ids by their note id (best chunk per note).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from llama_index.core import VectorStoreIndex
from llama_index.core.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore
from threadpoolctl import ThreadpoolController

from mindnet.errors import ConfigError
from mindnet.evaluation.beir import BeirDataset, load_beir, write_as_vault
from mindnet.evaluation.metrics import aggregate, latency_summary
from mindnet.indexing.pipeline import chunk_vector_store
from mindnet.indexing.report import ImportReport
from mindnet.retrieval.query import ExpandRequest, QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.service import Mindnet
from mindnet.settings import RetrieverConfig, Settings, TypesConfig

log = logging.getLogger(__name__)

EVAL_TYPE = "eval_doc"
EVAL_PREFIX = "eval"
TOP_K = 100
PLAIN = "plain"
_BLAS = ThreadpoolController()


@dataclass(frozen=True)
class ModeSpec:
    mode: str
    depth: int | None          # None: the configured expand depth


MODES: dict[str, ModeSpec] = {
    "semantic": ModeSpec("semantic", 0),
    "hybrid-nograph": ModeSpec("hybrid", 0),
    "hybrid": ModeSpec("hybrid", None),
}

Progress = Callable[[str, int, int], None]      # (stage, done, total)


@dataclass
class EvalReport:
    dataset: str
    embedding: str
    docs: int
    queries: int
    top_k: int
    work_dir: str
    depth: int
    import_report: dict[str, Any]
    modes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "embedding": self.embedding, "docs": self.docs,
                "queries": self.queries, "top_k": self.top_k, "depth": self.depth, "work_dir": self.work_dir,
                "import": self.import_report, "modes": self.modes}


# --------------------------------------------------------------------------- set-up


def parse_modes(text: str) -> list[str]:
    """'semantic,hybrid' -> ['semantic', 'hybrid']; unknown names raise ConfigError."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError(f"--modes {text!r}: unknown or empty {unknown}; use a comma-separated subset of "
                          f"{','.join(MODES)}")
    return list(dict.fromkeys(modes))


def eval_types(base: TypesConfig) -> TypesConfig:
    """The user's types config plus the one-chunk-per-document type `eval_doc`, made the default type."""
    data = base.model_dump(mode="json")
    data["chunk_profiles"][EVAL_TYPE] = {"strategy": "sliding", "target_words": 5000, "max_words": 10000,
                                         "overlap_words": 0}
    data["types"][EVAL_TYPE] = {"chunk_profile": EVAL_TYPE, "edge_defaults": ["related_to"],
                                "retriever_weight": 1.0}
    data["default_type"] = EVAL_TYPE
    data["exclude"] = []
    return TypesConfig.model_validate(data)


def default_work_dir(dataset_folder: Path, embedding: str) -> Path:
    return Path("data") / "eval" / f"{dataset_folder.resolve().name}-{embedding}"


def eval_settings(base: Settings, work_dir: Path, *, embedding: str,
                  qdrant_path: Path | None = None) -> Settings:
    """Settings for the eval index: its own vault, Qdrant folder, cache, logs and generated types config."""
    work_dir.mkdir(parents=True, exist_ok=True)
    types_path = work_dir / "types.yaml"
    types_path.write_text(yaml.safe_dump(eval_types(base.types).model_dump(mode="json"), sort_keys=False,
                                         allow_unicode=True), encoding="utf-8")
    values = base.model_dump()
    values.update(embedding=embedding, vault_root=work_dir / "vault",
                  qdrant_path=qdrant_path or work_dir / "qdrant", cache_dir=work_dir / "cache",
                  log_dir=work_dir / "logs", collection_prefix=EVAL_PREFIX, types_config=types_path,
                  retriever_config=base.retriever_path, qdrant_url=None)
    return Settings(**values)


def eval_retriever_config(config: RetrieverConfig, top_k: int = TOP_K) -> RetrieverConfig:
    """The user's retriever config with the cap raised to `top_k` (the file is not touched)."""
    return config.model_copy(update={"max_top_k": max(config.max_top_k, top_k)})


# --------------------------------------------------------------------------- running


def doc_ranking(nodes: Sequence[NodeWithScore]) -> list[str]:
    """Document ids best first: a chunk's note id, each note at its best chunk's rank."""
    ranking: dict[str, None] = {}
    for n in nodes:
        note_id = n.node.metadata.get("note_id")
        if note_id:
            ranking.setdefault(str(note_id), None)
    return list(ranking)


def _request(query: str, spec: ModeSpec, top_k: int) -> QueryRequest:
    expand = None if spec.depth is None else ExpandRequest(depth=spec.depth)
    return QueryRequest(query=query, mode=spec.mode, top_k=top_k, expand=expand, explain=False)


def _timed(fn: Callable[[], list[NodeWithScore]]) -> tuple[list[str], float]:
    with _BLAS.limit(limits=1, user_api="blas"):
        start = time.perf_counter()
        nodes = fn()
        seconds = time.perf_counter() - start
    return doc_ranking(nodes), seconds


def run_queries(dataset: BeirDataset, retriever: MindnetRetriever, plain: VectorIndexRetriever,
                modes: Sequence[str], *, top_k: int = TOP_K, progress: Progress | None = None
                ) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[float]]]:
    """Rankings and latencies per mode (plus `plain`); the modes of one query run back to back, in an order
    rotated from query to query so no mode always pays for a cold cache."""
    runners: dict[str, Callable[[str], list[NodeWithScore]]] = {
        name: (lambda q, s=MODES[name]: retriever.search(_request(q, s, top_k)).nodes) for name in modes}
    runners[PLAIN] = plain.retrieve
    names = list(runners)
    runs: dict[str, dict[str, list[str]]] = {name: {} for name in names}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    total = len(dataset.queries)
    for i, (query_id, text) in enumerate(dataset.queries.items()):
        for name in names[i % len(names):] + names[: i % len(names)]:
            ranking, took = _timed(lambda name=name, text=text: runners[name](text))
            runs[name][query_id] = ranking
            seconds[name].append(took)
        if progress:
            progress("queries", i + 1, total)
    return runs, seconds


def summarise(dataset: BeirDataset, runs: dict[str, dict[str, list[str]]],
              seconds: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Metrics and latency (ms) per mode; `latency_ratio` divides by the plain retriever's figures."""
    plain = latency_summary(seconds[PLAIN])
    out: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        lat = latency_summary(seconds[name])
        out[name] = {**aggregate(run, dataset.qrels),
                     "latency_ms": {k: round(1000 * v, 2) for k, v in lat.items()},
                     "latency_ratio": {k: round(lat[k] / plain[k], 3) if plain[k] else 0.0 for k in lat}}
    return out


def limit_queries(dataset: BeirDataset, limit: int | None) -> BeirDataset:
    if limit is None:
        return dataset
    if limit < 1:
        raise ConfigError(f"--limit-queries {limit}: must be at least 1")
    keep = list(dataset.queries)[:limit]
    return BeirDataset(name=dataset.name, corpus=dataset.corpus,
                       queries={q: dataset.queries[q] for q in keep},
                       qrels={q: dataset.qrels[q] for q in keep})


def run_eval(folder: str | Path, *, base: Settings, embedding: str | None = None,
             modes: Sequence[str] = tuple(MODES), limit: int | None = None, work_dir: Path | None = None,
             qdrant_path: Path | None = None, keep: bool = False, split: str = "test",
             progress: Progress | None = None) -> EvalReport:
    """Import (incrementally) and evaluate; returns the figures. Without `keep` the written notes are removed
    after the import (the Qdrant folder and the embedding cache always stay, for the next run)."""
    folder = Path(folder)
    embedding = embedding or base.embedding
    dataset = limit_queries(load_beir(folder, split), limit)
    work = work_dir or default_work_dir(folder, embedding)
    settings = eval_settings(base, work, embedding=embedding, qdrant_path=qdrant_path)
    write_as_vault(dataset, settings.vault_root)
    app = Mindnet(settings)
    try:
        report = app.ingest(settings.vault_root, progress=(lambda d, t, _p: progress("import", d, t))
                            if progress else None)
        if not keep:
            shutil.rmtree(settings.vault_root, ignore_errors=True)
        config = eval_retriever_config(settings.retriever)
        kinds = {k for spec in settings.types.types.values() for k in spec.edge_defaults}
        retriever = MindnetRetriever(client=app.client, embed_model=app.embed_model, config=config,
                                     prefix=settings.collection_prefix, known_edge_kinds=kinds)
        index = VectorStoreIndex.from_vector_store(chunk_vector_store(app.client, settings.collection_prefix),
                                                   embed_model=app.embed_model)
        plain = VectorIndexRetriever(index=index, similarity_top_k=TOP_K)
        runs, seconds = run_queries(dataset, retriever, plain, modes, progress=progress)
    finally:
        app.close()
    return EvalReport(dataset=dataset.name, embedding=embedding, docs=len(dataset.corpus),
                      queries=len(dataset.queries), top_k=TOP_K, work_dir=str(work),
                      depth=config.expand.depth,
                      import_report=_import_figures(report), modes=summarise(dataset, runs, seconds))


def _import_figures(report: ImportReport) -> dict[str, Any]:
    data = report.as_dict()
    keys = ("notes", "new", "changed", "unchanged", "chunks", "edges", "edges_by_kind", "embedded_texts",
            "seconds_total", "seconds_embedding")
    return {k: data[k] for k in keys if k in data}
