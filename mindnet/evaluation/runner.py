"""`mindnet eval`: import a BEIR-layout benchmark as a vault and measure retrieval quality and latency.

The corpus is written as a vault (one note per document, note id = document id) into a work folder
(default ``./data/eval/<dataset>-<embedding>/``) and imported through the real pipeline into that folder's own
index and embedding cache, so a second run re-uses the vectors and skips the import work.
The eval vault gets its own types config (a copy of the user's, plus a type `eval_doc` whose profile keeps a
document in one chunk and whose retriever weight is 1): BEIR documents are the retrieval unit, and the
published baselines embed each document once (the model truncates long ones).

Every test query runs in each mode (`semantic`, `hybrid-d0`/`-d1`/`-d2` = hybrid at expand depth 0, 1, 2) and
through a plain LlamaIndex `VectorIndexRetriever` over the same chunks, vectors and embedding model (`plain`:
`mindnet.evaluation.plain`), interleaved query by query, so latency ratios are measured under the same machine
load. Figures are at note level (nDCG@10, R@1/5/10, MRR@10 over distinct notes, each at its best chunk's rank)
plus dup@5, the share of the top-5 result slots that repeat a note already listed.

`run_vault_eval` does the same for a real vault (its own types, profiles and links) with a question file
(`vault_queries`); `inject` adds Maps of Content to a benchmark vault (`mocs`) to test robustness against hubs.
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
from llama_index.core.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore
from threadpoolctl import ThreadpoolController

from mindnet.errors import ConfigError
from mindnet.evaluation.beir import BeirDataset, load_beir, write_as_vault
from mindnet.evaluation.metrics import latency_summary, note_level
from mindnet.evaluation.mocs import inject_mocs, is_moc
from mindnet.evaluation.plain import plain_retriever
from mindnet.evaluation.vault_queries import build_questions, gold_qrels, load_questions, write_questions
from mindnet.indexing.report import ImportReport
from mindnet.retrieval.intent import type_vocabulary
from mindnet.retrieval.query import ExpandRequest, QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.service import Mindnet
from mindnet.settings import RetrieverConfig, Settings, TypesConfig

log = logging.getLogger(__name__)

EVAL_TYPE = "eval_doc"
EVAL_PREFIX = "eval"
TOP_K = 20
PLAIN = "plain"
_BLAS = ThreadpoolController()


@dataclass(frozen=True)
class ModeSpec:
    mode: str
    depth: int


MODES: dict[str, ModeSpec] = {
    "semantic": ModeSpec("semantic", 0),
    "hybrid-d0": ModeSpec("hybrid", 0),
    "hybrid-d1": ModeSpec("hybrid", 1),
    "hybrid-d2": ModeSpec("hybrid", 2),
}
ALIASES = {"hybrid-nograph": "hybrid-d0"}     # older name; "hybrid" means the configured depth
DEFAULT_MODES = ",".join(MODES)

Progress = Callable[[str, int, int], None]      # (stage, done, total)


@dataclass
class EvalTarget:
    """What is measured: question texts by id and graded gold notes per question."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


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
    mocs: dict[str, Any] | None = None
    top3: dict[str, dict[str, list[str]]] = field(default_factory=dict)   # mode -> query id -> first 3 notes
    skipped: dict[str, int] | None = None      # --make-queries: why -> notes that gave no question

    def as_dict(self) -> dict[str, Any]:
        out = {"dataset": self.dataset, "embedding": self.embedding, "docs": self.docs,
               "queries": self.queries, "top_k": self.top_k, "depth": self.depth, "work_dir": self.work_dir,
               "import": self.import_report, "modes": self.modes}
        if self.mocs is not None:
            out["mocs"] = self.mocs
        out["top3"] = self.top3
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


# --------------------------------------------------------------------------- set-up


def parse_modes(text: str, configured_depth: int = 1) -> list[str]:
    """'semantic,hybrid-d1' -> ['semantic', 'hybrid-d1']; 'hybrid' is the configured depth; unknown names
    raise ConfigError."""
    aliases = {**ALIASES, "hybrid": f"hybrid-d{configured_depth}"}
    modes = [aliases.get(m.strip(), m.strip()) for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError(f"--modes {text!r}: unknown or empty {unknown}; use a comma-separated subset of "
                          f"{DEFAULT_MODES} (or 'hybrid' for the configured depth)")
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
    """Settings for the eval index: its own vault, Qdrant folder, logs and generated types config; the embedding
    cache is the user's (keyed by model and text, so a benchmark re-run or an eval of the vault you imported
    embeds nothing new)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    types_path = work_dir / "types.yaml"
    types_path.write_text(yaml.safe_dump(eval_types(base.types).model_dump(mode="json"), sort_keys=False,
                                         allow_unicode=True), encoding="utf-8")
    values = base.model_dump()
    values.update(embedding=embedding, vault_root=work_dir / "vault",
                  qdrant_path=qdrant_path or work_dir / "qdrant", log_dir=work_dir / "logs",
                  collection_prefix=EVAL_PREFIX, types_config=types_path,
                  retriever_config=base.retriever_path, qdrant_url=None)
    return Settings(**values)


def vault_settings(base: Settings, vault: Path, work_dir: Path, *, embedding: str,
                   qdrant_path: Path | None = None) -> Settings:
    """Settings for evaluating a real vault: its own types and links as the user imports it, into a separate
    Qdrant folder (the user's index is not touched)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    values = base.model_dump()
    values.update(embedding=embedding, vault_root=vault, qdrant_path=qdrant_path or work_dir / "qdrant",
                  log_dir=work_dir / "logs", collection_prefix=EVAL_PREFIX, types_config=base.types_path,
                  retriever_config=base.retriever_path, qdrant_url=None)
    return Settings(**values)


def eval_retriever_config(config: RetrieverConfig, top_k: int = TOP_K) -> RetrieverConfig:
    """The user's retriever config with the cap raised to `top_k` (the file is not touched)."""
    return config.model_copy(update={"max_top_k": max(config.max_top_k, top_k)})


# --------------------------------------------------------------------------- running


def note_ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    """The note id of every returned item, in order (a note twice when two of its chunks were returned)."""
    return [str(n.node.metadata.get("note_id") or n.node.node_id) for n in nodes]


def doc_ranking(nodes: Sequence[NodeWithScore]) -> list[str]:
    """Document ids best first: a chunk's note id, each note at its best chunk's rank."""
    return list(dict.fromkeys(note_ids(nodes)))


def _request(query: str, spec: ModeSpec, top_k: int) -> QueryRequest:
    return QueryRequest(query=query, mode=spec.mode, top_k=top_k, expand=ExpandRequest(depth=spec.depth),
                        explain=False)


def _timed(fn: Callable[[], list[NodeWithScore]]) -> tuple[list[str], float]:
    with _BLAS.limit(limits=1, user_api="blas"):
        start = time.perf_counter()
        nodes = fn()
        seconds = time.perf_counter() - start
    return note_ids(nodes), seconds


@dataclass
class Runs:
    raw: dict[str, dict[str, list[str]]]           # mode -> query id -> note id of every returned item
    seconds: dict[str, list[float]]

    def ranking(self, mode: str) -> dict[str, list[str]]:
        return {q: list(dict.fromkeys(ids)) for q, ids in self.raw[mode].items()}


def run_queries(target: EvalTarget, retriever: MindnetRetriever, plain: VectorIndexRetriever,
                modes: Sequence[str], *, top_k: int = TOP_K, progress: Progress | None = None) -> Runs:
    """Rankings and latencies per mode (plus `plain`); the modes of one query run back to back, in an order
    rotated from query to query so no mode always pays for a cold cache."""
    runners: dict[str, Callable[[str], list[NodeWithScore]]] = {
        name: (lambda q, s=MODES[name]: retriever.search(_request(q, s, top_k)).nodes) for name in modes}
    runners[PLAIN] = plain.retrieve
    names = list(runners)
    runs = Runs(raw={name: {} for name in names}, seconds={name: [] for name in names})
    total = len(target.queries)
    for i, (query_id, text) in enumerate(target.queries.items()):
        for name in names[i % len(names):] + names[: i % len(names)]:
            ids, took = _timed(lambda name=name, text=text: runners[name](text))
            runs.raw[name][query_id] = ids
            runs.seconds[name].append(took)
        if progress:
            progress("queries", i + 1, total)
    return runs


def summarise(target: EvalTarget, runs: Runs) -> dict[str, dict[str, Any]]:
    """Note-level metrics and latency (ms) per mode; `latency_ratio` divides by the plain retriever's figures."""
    plain = latency_summary(runs.seconds[PLAIN])
    out: dict[str, dict[str, Any]] = {}
    for name in runs.raw:
        lat = latency_summary(runs.seconds[name])
        out[name] = {**note_level(runs.ranking(name), target.qrels, runs.raw[name]),
                     "latency_ms": {k: round(1000 * v, 2) for k, v in lat.items()},
                     "latency_ratio": {k: round(lat[k] / plain[k], 3) if plain[k] else 0.0 for k in lat}}
    return out


def moc_figures(target: EvalTarget, runs: Runs, mocs: dict[str, list[str]]) -> dict[str, Any]:
    """Per mode, the share of queries with an index note in the top 10."""
    share = {name: round(sum(any(is_moc(n) for n in ranking[:10]) for ranking in runs.ranking(name).values())
                         / max(1, len(target.queries)), 4) for name in runs.raw}
    return {"count": len(mocs), "links": sum(len(v) for v in mocs.values()), "queries_with_moc_in_top10": share}


def limit_queries(dataset: BeirDataset, limit: int | None) -> BeirDataset:
    if limit is None:
        return dataset
    if limit < 1:
        raise ConfigError(f"--limit-queries {limit}: must be at least 1")
    keep = list(dataset.queries)[:limit]
    return BeirDataset(name=dataset.name, corpus=dataset.corpus,
                       queries={q: dataset.queries[q] for q in keep},
                       qrels={q: dataset.qrels[q] for q in keep})


def _measure(app: Mindnet, settings: Settings, target: EvalTarget, modes: Sequence[str],
             progress: Progress | None) -> tuple[Runs, int]:
    config = eval_retriever_config(settings.retriever)
    kinds = {k for spec in settings.types.types.values() for k in spec.edge_defaults}
    retriever = MindnetRetriever(store=app.store, embed_model=app.embed_model, config=config, known_edge_kinds=kinds,
                                 type_words=type_vocabulary(settings.types))
    plain = plain_retriever(app.store, app.embed_model, TOP_K)
    return run_queries(target, retriever, plain, modes, progress=progress), config.expand.depth


def _import_progress(progress: Progress | None) -> Any:
    return (lambda d, t, _p: progress("import", d, t)) if progress else None


def run_eval(folder: str | Path, *, base: Settings, embedding: str | None = None,
             modes: Sequence[str] = tuple(MODES), limit: int | None = None, work_dir: Path | None = None,
             qdrant_path: Path | None = None, keep: bool = False, split: str = "test",
             inject: int = 0, seed: int = 1, progress: Progress | None = None) -> EvalReport:
    """Import (incrementally) a BEIR folder as a vault and evaluate; returns the figures. With `inject`, that many
    index notes (Maps of Content) linking 50-200 random documents are added first (their own work folder).
    Without `keep` the written notes are removed after the import (the Qdrant folder stays, for the next run)."""
    folder = Path(folder)
    embedding = embedding or base.embedding
    dataset = limit_queries(load_beir(folder, split), limit)
    work = work_dir or default_work_dir(folder, embedding)
    if inject:
        work = work.with_name(f"{work.name}-mocs{inject}-seed{seed}")
    settings = eval_settings(base, work, embedding=embedding, qdrant_path=qdrant_path)
    write_as_vault(dataset, settings.vault_root)
    mocs = inject_mocs(dataset, settings.vault_root, count=inject, seed=seed) if inject else None
    target = EvalTarget(dataset.name, dataset.queries, dataset.qrels)
    app = Mindnet(settings)
    try:
        report = app.ingest(settings.vault_root, progress=_import_progress(progress))
        if not keep:
            shutil.rmtree(settings.vault_root, ignore_errors=True)
        runs, depth = _measure(app, settings, target, modes, progress)
    finally:
        app.close()
    return EvalReport(dataset=dataset.name, embedding=embedding, docs=len(dataset.corpus),
                      queries=len(dataset.queries), top_k=TOP_K, work_dir=str(work), depth=depth,
                      import_report=_import_figures(report), modes=summarise(target, runs),
                      mocs=moc_figures(target, runs, mocs) if mocs is not None else None, top3=top3(runs))


def run_vault_eval(vault: str | Path, *, base: Settings, queries: str | Path | None = None,
                   make_queries: str | Path | None = None, embedding: str | None = None,
                   modes: Sequence[str] = tuple(MODES), work_dir: Path | None = None,
                   qdrant_path: Path | None = None, progress: Progress | None = None) -> EvalReport:
    """Import a real vault as the user would (its types, profiles, links) into a separate index and evaluate the
    questions of `queries`, or of a known-item set built from the vault and written to `make_queries`."""
    vault = Path(vault)
    if not vault.is_dir():
        raise ConfigError(f"--vault {vault}: not a folder; pass your vault's folder")
    if (queries is None) == (make_queries is None):
        raise ConfigError("mindnet eval --vault needs exactly one of --queries FILE.jsonl or --make-queries "
                          "OUT.jsonl")
    embedding = embedding or base.embedding
    skipped = None
    if make_queries is not None:
        built = build_questions(vault, base.types)
        questions, skipped = built.questions, built.skipped
        write_questions(questions, make_queries)
        source = str(make_queries)
    else:
        questions = load_questions(queries)
        source = str(queries)
    work = work_dir or Path("data") / "eval" / f"vault-{vault.resolve().name}-{embedding}"
    settings = vault_settings(base, vault, work, embedding=embedding, qdrant_path=qdrant_path)
    app = Mindnet(settings)
    try:
        report = app.ingest(vault, progress=_import_progress(progress))
        paths = {str(r.payload.get("path")): str(r.payload.get("note_id"))
                 for r in app.store.scroll("notes", payload=["path", "note_id"])}
        target = EvalTarget(vault.name, {q.id: q.text for q in questions}, gold_qrels(questions, paths, source))
        runs, depth = _measure(app, settings, target, modes, progress)
    finally:
        app.close()
    return EvalReport(dataset=vault.name, embedding=embedding, docs=len(paths), queries=len(questions),
                      top_k=TOP_K, work_dir=str(work), depth=depth, import_report=_import_figures(report),
                      modes=summarise(target, runs), top3=top3(runs), skipped=skipped)


def top3(runs: Runs) -> dict[str, dict[str, list[str]]]:
    return {name: {q: ids[:3] for q, ids in runs.ranking(name).items()} for name in runs.raw}


def _import_figures(report: ImportReport) -> dict[str, Any]:
    data = report.as_dict()
    keys = ("notes", "new", "changed", "unchanged", "chunks", "edges", "edges_by_kind", "embedded_texts",
            "seconds_total", "seconds_embedding")
    return {k: data[k] for k in keys if k in data}
