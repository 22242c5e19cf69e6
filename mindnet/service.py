"""`Mindnet`: the one object that owns the index (a `Store`), the embedding model and the components built on
them. The CLI, the HTTP API and the chat UI all go through it, so a server process holds the embedded index
folder once and serves import, query and chat from it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mindnet.backends import (
    Embedder,
    EmbeddingCache,
    embedding_batch_size,
    embedding_key,
    embedding_parallel_calls,
    make_embedding,
    make_reranker,
    query_embedder,
)
from mindnet.errors import ImportRunningError, MindnetError
from mindnet.indexing.progress import ImportProgress
from mindnet.service_drafts import DraftsMixin
from mindnet.service_health import HealthMixin
from mindnet.service_search import SearchMixin
from mindnet.service_vault import VaultMixin
from mindnet.settings import SAMPLE_VAULT, Settings
from mindnet.store.engine import Store
from mindnet.store.factory import MEMORY, needs_rebuild, open_store
from mindnet.store.folder import held_by_other, locked_error, remove_legacy

# Search (networkx; LlamaIndex only for the chat and `retriever`) and the import pipeline are imported when
# first used, so that `mindnet check` or an unchanged `mindnet ingest` does not pay seconds of imports for
# search, nor `mindnet query` for the import (benchmark: python -m benchmarks.bench_cli)
if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from mindnet.analysis.analyzer import Analyzer
    from mindnet.analysis.models import AnalysisResult
    from mindnet.chat.engine import ChatEngine
    from mindnet.indexing.pipeline import Importer, ImportReport, Progress
    from mindnet.retrieval.retriever import MindnetRetriever
    from mindnet.retrieval.search import GraphSearch

log = logging.getLogger(__name__)

# the bundled sample vault shows how problems are reported: said so, so that they are not taken for bugs
SAMPLE_PLANTED = ("the sample vault has three problems on purpose, to show how mindnet reports them: the unknown "
                  "type 'recipe' in Linsensuppe.md, the broken frontmatter of broken-frontmatter.md and the link to "
                  "[[Zettelkasten Methode]], a note not written yet")


class LiveState(Protocol):
    """The live index as the service knows it (`mindnet.live.LiveIndex`, which takes a `Mindnet`: the service
    does not import it). Set by `mindnet serve` / `mindnet watch`; read by /health and the agents' status."""

    def status(self) -> dict[str, Any]: ...

    def stop(self, timeout: float = 30) -> None: ...


class Mindnet(SearchMixin, VaultMixin, HealthMixin, DraftsMixin):
    """The whole of mindnet over one index: import (`ingest`), search (`query`, `retriever`), chat (`chat`),
    drafts and logs, sharing one store and embedding model. `Mindnet.from_env()` builds it from the MINDNET_*
    settings; `Mindnet(settings, store=..., embed_model=...)` takes your own; `close()` releases the index.

    Its parts over this state are mixins, each in a module of its own: search and its history (`service_search`),
    the vault an index belongs to (`service_vault`), what does not work now (`service_health`) and saving a
    draft (`service_drafts`)."""

    def __init__(self, settings: Settings, *, store: Store | None = None,
                 embed_model: BaseEmbedding | None = None, read_only: bool = False) -> None:
        self.settings = settings
        self._store = store
        self.read_only = read_only      # a command that only reads: a missing index folder is not created
        self._embed_model = embed_model
        # one store per process: imports and searches take turns on it, step by step (a search never meets a
        # half-written batch of notes, and waits for the whole of phase 1 of a full rebuild)
        self._open_lock = threading.Lock()
        self.index_lock = threading.RLock()   # re-entrant: a full rebuild holds it across its steps
        # one import at a time; it takes `index_lock` only for each write step, so searches run in between
        self.import_lock = threading.Lock()
        self.vectors_lock = threading.Lock()   # one phase 2 at a time (it may run beside a phase 1)
        self.progress = ImportProgress()
        self._wanted = threading.Event()       # another import waits for `import_lock`
        self._warming = False                  # `warm` runs: the index is about to open
        self._importing = False
        self.live: LiveState | None = None     # set by `mindnet serve` / `mindnet watch` (mindnet.live)
        self.serving = False    # searches beside imports (API, MCP): no rewrite of the chunks (_index_for_size)
        self.store_process = False   # `mindnet serve`: the embedded index in a child process (settings.index_process)
        self.last_counts: dict[str, int] = {}   # points per collection after the last complete import
        self._problems: dict[str, str] = {}    # what does not work now (the index cannot be opened, ...)

    @classmethod
    def from_env(cls, **overrides: object) -> Mindnet:
        return cls(Settings.from_env(**overrides))

    @cached_property
    def store(self) -> Store:
        # `mindnet serve` opens it in a background thread while an import or a search may ask too: opened once
        with self._open_lock:
            if "store" not in self.__dict__:
                self.__dict__["store"] = self._store or open_store(self.settings, create=not self.read_only,
                                                                     process=self.store_process)
            return self.__dict__["store"]

    @property
    def opened(self) -> bool:
        return "store" in self.__dict__ or self._store is not None

    @property
    def engine(self) -> str:
        """Which engine holds the index: qdrant-edge (embedded) or qdrant-server."""
        return "qdrant-server" if self.settings.qdrant_url else "qdrant-edge"

    @property
    def searchable(self) -> bool:
        """A search is answered now: the index is open."""
        return self.opened

    @property
    def opening(self) -> bool:
        """The index is being opened right now (`mindnet serve` opens it and its collections in the background)."""
        return self._warming or (not self.opened and self._open_lock.locked())

    def check_free(self) -> None:
        """Raise StoreLockedError now when another mindnet process holds the embedded index folder (before a
        server starts and opens it in the background)."""
        folder = self._local_folder()
        if folder is not None:
            holder = held_by_other(folder)
            if holder:
                raise locked_error(folder, holder)

    @cached_property
    def embed_model(self) -> BaseEmbedding:
        return self._embed_model or make_embedding(self.settings)

    @cached_property
    def embedder(self) -> Embedder:
        cache = EmbeddingCache(self.settings.cache_dir / "embeddings.sqlite")
        return Embedder(None, embedding_key(self.settings), cache, make_model=lambda: self.embed_model,
                        batch_size=embedding_batch_size(self.settings),
                        parallel=embedding_parallel_calls(self.settings))

    @cached_property
    def importer(self) -> Importer:
        from mindnet.indexing.pipeline import Importer
        # the index is opened only when the import needs it (an unchanged vault, by the manifest, does not)
        opener = (lambda: self.store) if not self.opened else self.store
        return Importer(store=opener, prefix=self.settings.collection_prefix, embedder=self.embedder,
                        types=self.settings.types, lock=self.index_lock, progress=self.progress,
                        on_written=self._after_import, on_embedded=self._after_vectors,
                        manifest=self.settings.cache_dir / f"manifest-{self.settings.collection_prefix}.json",
                        local_folder=self._local_folder())

    @cached_property
    def searcher(self) -> GraphSearch:
        """The search over this index, without LlamaIndex (`mindnet query`, the HTTP API): the question embedded
        by the model given to this object, else the backend's own query function (`query_embedder`); the head of
        the list reranked by the chat LLM (Ollama) when retriever.yaml enables it."""
        from mindnet.retrieval.search import GraphSearch
        embed_query = self._embed_model.get_query_embedding if self._embed_model is not None else \
            query_embedder(self.settings, model=lambda: self.embed_model)
        rerank, name = None, ""
        if (reranker := make_reranker(self.settings)) is not None:
            from mindnet.retrieval.retriever import hit_reranker
            rerank, name = hit_reranker(reranker, self.settings.retriever.rerank.limit), reranker.class_name()
        searcher = GraphSearch.from_settings(self.settings, store=self.store, embed_query=embed_query,
                                             rerank=rerank, reranker_name=name, lock=self.index_lock,
                                             write_graph=True, gate=self._search_gate)
        if self.store.exists("notes"):   # ready to search: the link graph is read now, not in the first search
            log.info("search ready (link graph: %s)", searcher.warm())
        return searcher

    @cached_property
    def retriever(self) -> MindnetRetriever:
        """The same search as a LlamaIndex retriever (the chat, Save & Analyze, your own pipelines)."""
        from mindnet.retrieval.retriever import MindnetRetriever
        return MindnetRetriever(embed_model=self.embed_model, searcher=self.searcher)

    def warm(self) -> None:
        """Open the index and make searches ready (`mindnet serve` runs it in the background at start, so
        /health answers at once)."""
        self._warming = True
        try:
            _ = self.searcher
            self.searcher.warm_dense()
            self.counts()      # every collection opened here, not by a /health that counts it
        except (MindnetError, OSError, ValueError) as exc:   # the first search reports it to the user
            log.warning("could not open the index at start: %s", exc)
            self._problems["index"] = str(exc)
        finally:
            self._warming = False

    @property
    def index_folder(self) -> Path | None:
        """The embedded index folder this object opens, else None (a Qdrant server, or a store given to it)."""
        return self._local_folder()

    def _local_folder(self) -> Path | None:
        """The embedded index folder this object opens itself, else None (a server, or a store given to it)."""
        if self.settings.qdrant_url or self._store is not None or str(self.settings.qdrant_path) == MEMORY:
            return None
        return Path(self.settings.qdrant_path)

    def ingest(self, vault: Path | None = None, *, full: bool = False, progress: Progress | None = None,
               should_stop: Callable[[], bool] | None = None, first: Sequence[str] = (), embed: bool = True,
               confirm_deletes: Callable[[int, int], bool] | None = None) -> ImportReport:
        """Import the vault: phase 1 (one import at a time; a running one yields to this one between its
        batches), then with `embed` phase 2, unless a server's vector worker is embedding already (it picks the
        new chunks up). Searches keep answering between the write steps of both.

        The index must have been built from this vault (`check_vault`), and an import that would delete more
        than half of its notes asks `confirm_deletes(deleting, indexed)` first (None: refused,
        MassDeleteError); nothing is written when either says no."""
        started = time.perf_counter()
        vault = Path(vault or self.settings.vault_root)
        self.check_vault(vault, full=full)
        embedder = self.embedder
        calls0, texts0, backend0 = embedder.calls, embedder.embedded, embedder.seconds
        self._wanted.set()
        # phase 2 begins beside phase 1 (embedding the notes written), unless a server's vector worker runs
        beside = embed and self.importer.overlap and self.vectors_lock.acquire(blocking=False)
        folder = self._local_folder()
        legacy = needs_rebuild(folder, self.settings.collection_prefix) if folder is not None else None
        if legacy:
            log.warning("%s", legacy)
        try:
            with self.import_lock:
                self._wanted.clear()
                importer = self.importer

                def stop() -> bool:
                    return self._wanted.is_set() or bool(should_stop and should_stop())

                from mindnet.indexing.pipeline import EmbeddingWorker
                worker = EmbeddingWorker(importer) if beside else None
                try:
                    report = importer.run(vault, full=full, progress=progress, should_stop=stop, first=first,
                                          embed=False, feed=worker.feed if worker else None,
                                          confirm_deletes=confirm_deletes)
                except BaseException:
                    if worker is not None:
                        worker.finish()
                    raise
                finally:
                    self._after_import()
                if not report.stopped_early:    # a newer run is about to write again: it writes the graph
                    self._write_graph()
                    self._record_vault(vault)
                    if full:
                        for key in [k for k in self._problems if k == "index" or k.startswith("counts")]:
                            self._problems.pop(key, None)     # rebuilt: what was found damaged is gone
            failed: set[str] = set()
            if worker is not None:       # what phase 1 handed over, embedded to the end
                failed = importer.beside_issues(report, worker.finish())
            if embed and not report.stopped_early and (beside or self.vectors_lock.acquire(blocking=False)):
                try:
                    report.absorb(importer.fill(should_stop=should_stop, skip=failed))
                    self._index_for_size(report)
                finally:
                    if not beside:
                        self.vectors_lock.release()
        finally:
            if beside:
                self.vectors_lock.release()
        if vault.resolve() == SAMPLE_VAULT.resolve():
            report.notices.append(SAMPLE_PLANTED)
        if legacy and folder is not None and not report.stopped_early:
            freed = remove_legacy(folder)
            report.notices.append(f"the index was rebuilt with Qdrant Edge from the vault and the embedding cache; "
                                  f"the old local-mode files ({freed / 1e6:.1f} MB) were removed")
        if beside:     # both phases side by side: the totals over the whole run, not the sum of the phases
            report.embedding_calls = embedder.calls - calls0
            report.embedded_texts = embedder.embedded - texts0
            report.seconds_embedding = embedder.seconds - backend0
            report.seconds_total = time.perf_counter() - started
        return report

    def fill_vectors(self, *, should_stop: Callable[[], bool] | None = None) -> ImportReport:
        """Phase 2 alone (a server's vector worker): embed every chunk still without a dense vector."""
        with self.vectors_lock:
            return self.importer.fill(should_stop=should_stop)

    async def aingest(self, vault: Path | None = None, *, full: bool = False, progress: Progress | None = None,
                      confirm_deletes: Callable[[int, int], bool] | None = None) -> ImportReport:
        """The import in a worker thread, so a server keeps answering (searches wait for the index)."""
        if self._importing:
            raise ImportRunningError("an import is already running in this process; wait for it to finish")
        self._importing = True
        try:
            self.last_counts = await asyncio.to_thread(self.counts)   # what /health shows meanwhile
            return await asyncio.to_thread(self.ingest, vault, full=full, progress=progress,
                                           confirm_deletes=confirm_deletes)
        finally:
            self._importing = False

    def reload_types(self) -> None:
        """Read the types config again (it changed on disk); the next import rebuilds the notes it affects.
        An invalid file raises ConfigError and the config in force stays."""
        from mindnet.settings import TypesConfig, load_yaml_model
        types = load_yaml_model(self.settings.types_path, TypesConfig)
        with self.import_lock:
            self.settings.__dict__["types"] = types
            self.__dict__.pop("importer", None)

    @property
    def importing(self) -> bool:
        """An import runs: an HTTP /ingest, or the live index's phase 1 or phase 2."""
        return self._importing or self.progress.writing or self.progress.embedding

    def _index_for_size(self, report: ImportReport) -> None:
        """After an import that wrote, the embedded engine rewrites the chunks into segments that open at once
        (`store.edge_layout`), with HNSW past `dense.exact_below` (retriever.yaml). Not while `serving`: it closes
        the shard for 25-90 s at 5,000-30,000 notes; the next `mindnet ingest` that writes does it."""
        if not self.opened or report.stopped_early or not (report.new or report.changed or report.moved):
            return
        with self.index_lock:
            hnsw = self.store.count("chunks") > self.settings.retriever.dense.exact_below
            if self.serving and not hnsw:       # searches keep answering; only HNSW, where needed, is built
                return
            started = time.perf_counter()
            self.store.optimize(hnsw=hnsw)
            log.info("index optimised%s in %.1f s", " (HNSW built)" if hnsw else "", time.perf_counter() - started)

    def _write_graph(self) -> None:
        """The link graph's file beside an embedded index, current with what phase 1 wrote, so a server or the
        Python API opens in seconds (`graph_file`). A run that wrote nothing finds it current (one read of the
        note records); a run that found nothing changed without opening the index leaves it alone."""
        if not self.opened:
            return
        from mindnet.retrieval import graph_file
        if graph_file.graph_path(self.store) is None:
            return
        with self.index_lock:
            opened = graph_file.open_graph(self.store)
        log.info("link graph %s in %.2f s", opened.status, opened.seconds)

    def _after_import(self) -> None:
        if "searcher" in self.__dict__:
            with self.index_lock:    # between two searches: one search must not see its graph change
                self.searcher.invalidate()
        if "analyzer" in self.__dict__:
            self.analyzer.invalidate()

    # ------------------------------------------------------------------ analyze (saving drafts: service_drafts)

    @cached_property
    def analyzer(self) -> Analyzer:
        """Suggestions for a draft or a note (links, relation kinds, type, tags, duplicate); reads only."""
        from mindnet.analysis.analyzer import Analyzer
        from mindnet.chat.llm import LLMGate
        return Analyzer(settings=self.settings, store=self.store, retriever=self.retriever,
                        embedder=self.embedder, lock=self.index_lock, gate=LLMGate(settings=self.settings))

    def analyze(self, **request: object) -> AnalysisResult:
        """`text=` (a Markdown draft) or `note=` (id or vault path); see `Analyzer.analyze`."""
        return self.analyzer.analyze(**request)  # type: ignore[arg-type]

    async def aanalyze(self, **request: object) -> AnalysisResult:
        return await asyncio.to_thread(self.analyze, **request)

    def _after_vectors(self) -> None:
        if "searcher" in self.__dict__:
            with self.index_lock:
                self.searcher.vectors_changed()

    # ------------------------------------------------------------------ chat

    @cached_property
    def chat(self) -> ChatEngine:
        """The chat engine (router + strategies) over this service's retriever, logs and LLM."""
        from mindnet.chat.context import ChatServices
        from mindnet.chat.engine import ChatEngine
        from mindnet.chat.llm import LLMGate
        services = ChatServices(settings=self.settings, retriever=self.retriever, gate=LLMGate(settings=self.settings),
                                record=self.record, logs=self.logs, progress=self.progress.as_dict)
        return ChatEngine.from_services(services)

    def indexed_notes(self) -> list[dict]:
        """title, type and link count of every indexed note ([] before the first import): the chat's starters."""
        with self.index_lock:
            if not self.store.exists("notes"):
                return []
            records = list(self.store.scroll("notes", payload=["title", "names", "type", "edge_ids"]))
        return [{"title": r.payload.get("title"), "names": list(r.payload.get("names") or []),
                 "type": r.payload.get("type"), "links": len(r.payload.get("edge_ids") or [])} for r in records]

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()
        if "embedder" in self.__dict__:
            self.embedder.cache.close()
