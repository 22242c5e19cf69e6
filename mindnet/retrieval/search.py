"""`GraphSearch`: mindnet's search without LlamaIndex: semantic and hybrid graph retrieval returning mindnet's own
hits (`hits.Hit`, each with its score breakdown and explanation as data). `mindnet query`, the HTTP API and the
MCP tools search with it; `MindnetRetriever` (retriever.py), the LlamaIndex retriever, is a thin adapter over it.

semantic: dense vector search over `<prefix>_chunks`; S_sem = the cosine min-max normalised over the candidates
          (cosines of one model sit in a narrow band, so raw, the type weight would decide the order); no graph.
hybrid:   dense + BM25 sparse search for every query text (multi-query: search_text/query + variants,
          hyde texts dense-only, keywords as the sparse query), fused per candidate as
          S_sem = alpha * dense (min-max normalised over the candidates) + (1 - alpha) * BM25 / max BM25,
          then graph expansion around the best candidates; notes reached only through the graph become
          candidates with their own scores from their stored vectors; finally the formula (`hit_scorer`).

Every search, filter and vector read is the engine's (`mindnet.store`: Qdrant Edge or a Qdrant server); the
link graph is held in memory (`graph_file`), as graph expansion reads it several times per query.

This module opens the index and runs the stages in order; the stages are their own modules: `candidates.py`
(the searches), `fusion.py` (S_sem), `graph.py` (expansion) and `ranking.py` (scoring and the hits shown).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from mindnet.errors import EmptyIndexError, IndexRebuildingError
from mindnet.indexing.sparse import SparseEncoder
from mindnet.indexing.state import REBUILDING
from mindnet.retrieval.candidates import Pool, complete, graph_candidates, unit
from mindnet.retrieval.fusion import dense_bounds, fuse, language_split
from mindnet.retrieval.graph import STRUCTURAL, FanOut, GraphStats, LinkGraph, Subgraph, expand
from mindnet.retrieval.graph_file import open_graph
from mindnet.retrieval.hit_scorer import HitScorer
from mindnet.retrieval.hits import Hit, NoteHit, aggregate_hits
from mindnet.retrieval.intent import type_vocabulary
from mindnet.retrieval.query import BUILTIN_EDGE_KINDS, QueryRequest, ResolvedQuery
from mindnet.retrieval.ranking import score_hits
from mindnet.settings import RetrieverConfig, Settings
from mindnet.store.collections import WITHOUT_DENSE
from mindnet.store.engine import SearchParams, Store, Where
from mindnet.store.factory import needs_rebuild

log = logging.getLogger(__name__)
_BLAS = ThreadpoolController()

# the head of the hits reranked, given the question: (hits, question) -> hits (`MindnetRetriever` makes it from
# a LlamaIndex postprocessor); `name` says which reranker in the trace
Rerank = Callable[[list[Hit], str], list[Hit]]


@dataclass
class SearchResult:
    """What `GraphSearch.search` returns: the hits shown, the resolved request (mode, top_k, depth after
    defaults and caps), note-level hits when aggregation is on, and timings in `trace`."""

    hits: list[Hit]
    query: ResolvedQuery
    notes: list[NoteHit] | None = None
    trace: dict[str, Any] = field(default_factory=dict)


class GraphSearch:
    """Semantic or hybrid (dense + BM25) search, graph expansion and the formula over one index, each hit with
    a score breakdown and an explanation in its metadata. `embed_query(text)` gives the question's vector with
    the model the index was built with (`backends.query_embedder`); `rerank` (optional) reorders the head."""

    def __init__(self, *, store: Store, embed_query: Callable[[str], Sequence[float]], config: RetrieverConfig,
                 known_edge_kinds: set[str] | None = None, rerank: Rerank | None = None, reranker_name: str = "",
                 sparse: SparseEncoder | None = None, lock: threading.Lock | None = None,
                 type_words: dict[str, str] | None = None, write_graph: bool = False,
                 gate: Callable[[], None] | None = None) -> None:
        self.store = store
        self.embed_query = embed_query
        self.config = config
        self.prefix = store.prefix
        self.known_edge_kinds = set(known_edge_kinds or ()) | BUILTIN_EDGE_KINDS | set(config.expand.edge_types)
        self.rerank = rerank
        self.reranker_name = reranker_name
        self.sparse = sparse or SparseEncoder()
        self.type_words = type_words or {}   # word -> note type, for the type a question asks for (intent.py)
        self.scorer = HitScorer.from_config(config)
        # one store per index: serialise its use across threads (and with imports, when shared)
        self._lock = lock or threading.Lock()
        self.write_graph = write_graph       # a stale graph file is written again (a server; not a read-only CLI)
        self._graph: LinkGraph | None = None
        self.graph_status = "not loaded"
        self._unembedded: tuple[int, int] | None = None   # (chunks without dense vector, all chunks)
        self.gate = gate        # raises while this process rebuilds the index (Mindnet: IndexRebuildingError)
        self._rebuild_unfinished: bool | None = None      # the index's token says a full rebuild stopped half-way

    @classmethod
    def from_settings(cls, settings: Settings, *, store: Store, embed_query: Callable[[str], Sequence[float]],
                      **kwargs: Any) -> GraphSearch:
        kinds = {k for spec in settings.types.types.values() for k in spec.edge_defaults}
        kwargs.setdefault("type_words", type_vocabulary(settings.types))
        return cls(store=store, embed_query=embed_query, config=settings.retriever, known_edge_kinds=kinds,
                   **kwargs)

    def close(self) -> None:
        """Close the index (an embedded folder can then be opened by another process)."""
        self.store.close()

    def invalidate(self) -> None:
        """Forget the cached graph and counts (call after an import): the next search reads the graph again,
        from this process's copy or the file when current, else patched or rebuilt from the edges."""
        self._graph = None
        self._unembedded = None
        self._rebuild_unfinished = None

    def warm(self) -> str:
        """Load the link graph now, so the first search is not the slow one (`Mindnet` and `mindnet serve` do it
        when they open the index); returns how it was opened (`loaded`, `current`, `patched`, `built`, ...)."""
        with self._lock:
            self._link_graph()
            return self.graph_status

    def _link_graph(self) -> LinkGraph:
        if self._graph is None:
            opened = open_graph(self.store, write=self.write_graph)
            g = self.config.graph
            self._graph = LinkGraph.from_data(opened.data, g.hub_degree, g.chance)
            self.graph_status = opened.status
            # the graph's objects live as long as it does: out of the collector's view (a full collection walked
            # them all in the first search, 2-3 s at 30,000 notes under load 9-12; after the freeze 0.8-1.0 s);
            # the young generations collected first, so no recent garbage is frozen with it
            gc.collect(1)
            gc.freeze()
            log.info("link graph ready (%s) in %.2f s", opened.status, opened.seconds)
        return self._graph

    def warm_dense(self) -> None:
        """One dense search, the way searches make it, so the first user's search does not pay the engine's
        first-use cost (its segments read in)."""
        if not self.store.exists("chunks"):
            return
        dim = len(unit(self.embed_query("warm")))
        probe = [1.0] + [0.0] * (dim - 1)
        with self._lock, _BLAS.limit(limits=1, user_api="blas"):
            self.store.search_dense(probe, 1, params=self._dense_params())

    def graph_stats(self) -> GraphStats:
        """Vault-wide link degrees and PageRank for hub damping (with the link graph)."""
        return self._link_graph().stats

    def link_kinds(self) -> list[str]:
        """The edge kinds between notes this index knows (structural chunk edges left out)."""
        return sorted(k for k in self.known_edge_kinds if k not in STRUCTURAL)

    def neighbourhood(self, note_ids: list[str], depth: int, edge_kinds: list[str] | None = None,
                      max_edges: int | None = None) -> Subgraph:
        """The notes and resolved links `depth` hops around `note_ids` (in both directions) over `edge_kinds`
        (default: every kind between notes), strongest links first, at most `max_edges` (agents' `related`)."""
        kinds = list(edge_kinds) if edge_kinds else self.link_kinds()
        with self._lock:
            graph = self._link_graph()
            return expand(graph.index, note_ids, depth, kinds, stats=graph.stats,
                          caps=FanOut(per_note=None, per_query=max_edges))

    def vectors_changed(self) -> None:
        """Dense vectors were added (phase 2 of an import): recount the chunks still without one."""
        self._unembedded = None

    def _coverage(self) -> tuple[int, int]:
        """(chunks without a dense vector, all chunks), counted once per change of the index."""
        if self._unembedded is None:
            self._unembedded = (self.store.count("chunks", WITHOUT_DENSE), self.store.count("chunks"))
        return self._unembedded

    def _dense_params(self) -> SearchParams:
        """Exact below the configured size (the same hits every time), HNSW above it."""
        dense = self.config.dense
        return SearchParams(exact=True) if self._coverage()[1] <= dense.exact_below else \
            SearchParams(exact=False, hnsw_ef=dense.hnsw_ef)

    def fan_out(self) -> FanOut:
        e = self.config.expand
        return FanOut(per_note=e.max_edges_per_note, per_query=e.max_edges)

    def resolve(self, request: QueryRequest) -> ResolvedQuery:
        return request.resolved(self.config, self.known_edge_kinds, self.type_words)

    def _require_index(self) -> None:
        if self.gate is not None:
            self.gate()
        if self._rebuild_unfinished is None:
            self._rebuild_unfinished = self.store.read_token() == REBUILDING
        if self._rebuild_unfinished:
            raise IndexRebuildingError(
                f"the index at {self.store.location} is incomplete: a full rebuild stopped before it had written "
                f"every note ({self.store.count('notes') if self.store.exists('notes') else 0} so far); run "
                f"`mindnet ingest` to finish it (a running `mindnet serve` finishes it by itself)", retry_after=30)
        if not self.store.exists("chunks"):
            where = self.store.location
            reason = needs_rebuild(self.store.folder, self.prefix) if self.store.folder is not None else None
            raise EmptyIndexError(reason or f"nothing to search yet: the index at {where} holds no collection "
                                            f"{self.prefix}_chunks; import your vault first (`mindnet ingest "
                                            f"[VAULT]`, or POST /ingest)")

    async def asearch(self, request: QueryRequest) -> SearchResult:
        return await asyncio.to_thread(self.search, request)

    def search(self, request: QueryRequest) -> SearchResult:
        q = self.resolve(request)
        self._require_index()
        trace: dict[str, Any] = {"mode": q.mode, "top_k": q.top_k, "depth": q.depth}
        t0 = time.perf_counter()
        texts = request.texts()
        dense_vecs = [unit(self.embed_query(t)) for t in texts + request.hyde]
        trace["queries"] = {"dense": texts + request.hyde, "sparse": [] if q.mode == "semantic" else
                            list(dict.fromkeys(request.sparse_text(t) for t in texts))}
        trace["embed_ms"] = round(1000 * (time.perf_counter() - t0), 1)
        with self._lock, _BLAS.limit(limits=1, user_api="blas"):
            return self._search_locked(q, dense_vecs, trace)

    @staticmethod
    def _filter(q: ResolvedQuery) -> Where | None:
        """The request's filters as the engine's: types, tags, note ids and a vault folder ("projects" keeps
        projects/x.md and projects/a/y.md, not projects-old/x.md: chunks list their folders)."""
        f = q.request.filters
        folder = (f.path_prefix or "").strip("/")
        where = Where.fields(type=f.types, tags=f.tags, note_id=f.note_ids, folders=[folder] if folder else [])
        return None if where.empty else where

    def _search_locked(self, q: ResolvedQuery, dense_vecs: list[np.ndarray], trace: dict) -> SearchResult:
        t0 = time.perf_counter()
        flt = self._filter(q)
        pool = max(q.top_k * 3, 30)
        # with the graph at hand, the candidates' ranking fields come from it, not from their payloads
        found = Pool(self._link_graph().brief_of if q.mode == "hybrid" and q.depth > 0 else None)
        dense_limit = pool if q.mode == "semantic" else max(pool, self.config.hybrid.dense_prefetch)
        found.search_dense(self.store, dense_vecs, dense_limit, flt, self._dense_params())
        trace["dense_ms"] = round(1000 * (time.perf_counter() - t0), 1)

        if q.mode == "hybrid":
            t1 = time.perf_counter()
            found.search_sparse(self.store, self.sparse.encode_queries(trace["queries"]["sparse"]),
                                self.config.hybrid.sparse_prefetch, flt)
            trace["sparse_ms"] = round(1000 * (time.perf_counter() - t1), 1)

        found.cosines(self.store, dense_vecs)
        cands = found.cands
        alpha = self.config.hybrid.alpha
        lo, hi = dense_bounds(cands.values())
        split = language_split(q, cands.values(), self.config)
        fuse(q, cands.values(), lo, hi, alpha, split)
        trace["candidates"] = len(cands)
        self._trace_coverage(q, trace)

        subgraph: Subgraph | None = None
        if q.mode == "hybrid" and q.depth > 0 and cands:
            t2 = time.perf_counter()
            ranked = sorted(cands.values(), key=lambda c: -c.semantic)[: self.config.expand.seeds]
            seeds = {c.payload["chunk_id"]: c.semantic for c in ranked}
            graph = self._link_graph()
            subgraph = expand(graph.index, list(seeds), q.depth, q.edge_types, seeds, stats=graph.stats,
                              caps=self.fan_out())
            graph_only = graph_candidates(self.store, graph, subgraph, cands, flt, dense_vecs, found,
                                          max_nodes=self.config.expand.max_nodes,
                                          unembedded_chunks=bool(self._coverage()[0]))
            fuse(q, graph_only, lo, hi, alpha, split)
            for c in graph_only:
                cands[c.point_id] = c
            trace["graph"] = {"seeds": sorted({s.rsplit("#c", 1)[0] for s in seeds}),
                              "nodes": subgraph.graph.number_of_nodes(), "edges": subgraph.graph.number_of_edges(),
                              "graph_only_candidates": len(graph_only),
                              "ms": round(1000 * (time.perf_counter() - t2), 1)}

        t3 = time.perf_counter()
        scored, all_chunks = score_hits(
            q, list(cands.values()), subgraph, scorer=self.scorer,
            other_types_weight=self.config.intent.other_types_weight, rerank_limit=self.config.rerank.limit,
            link_titles=self._link_graph().titles if subgraph is not None else None,
            complete=lambda shown: complete(self.store, shown))
        if q.rerank and self.rerank is not None:
            try:
                scored = self.rerank(scored, q.request.query)
                trace["rerank"] = {"limit": self.config.rerank.limit, "reranker": self.reranker_name}
            except Exception as exc:  # any postprocessor, any backend: a failed rerank keeps the scored order
                log.warning("rerank failed, keeping the scored order: %s", exc)
                trace["rerank"] = {"failed": str(exc)}
        trace["scoring_ms"] = round(1000 * (time.perf_counter() - t3), 1)
        trace["total_ms"] = round(1000 * (time.perf_counter() - t0), 1) + trace.get("embed_ms", 0)
        notes = aggregate_hits(all_chunks, q.aggregate) if q.aggregate else None
        trace["group"] = q.group
        return SearchResult(hits=scored[: q.top_k], query=q, notes=notes, trace=trace)

    def _trace_coverage(self, q: ResolvedQuery, trace: dict) -> None:
        """How many chunks the dense search cannot see yet; semantic mode says what it misses."""
        missing, total = self._coverage()
        trace["unembedded_chunks"] = missing
        if not missing:
            return
        if q.mode == "semantic":
            trace["notice"] = (f"semantic search covers {total - missing} of {total} chunks: {missing} are not "
                               f"embedded yet (an import is adding their vectors), so notes among them are "
                               f"missing here; hybrid mode finds them by keywords and links")
        else:
            trace["notice"] = (f"{missing} of {total} chunks are not embedded yet: hybrid search finds them by "
                               f"keywords and links, and by meaning once the import has embedded them")

    # ------------------------------------------------------------------ search with the caller's vectors

    def search_vectors(self, q: ResolvedQuery, vectors: list[Any], sparse_texts: list[str]) -> SearchResult:
        """The search for dense vectors the caller already has (a text's chunk vectors, e.g. a note's stored
        ones) and the texts for BM25; `q` is resolved by the caller, who may go past the top_k cap."""
        self._require_index()
        trace: dict[str, Any] = {"mode": q.mode, "top_k": q.top_k, "depth": q.depth, "embed_ms": 0.0,
                                 "queries": {"dense": [f"<{len(vectors)} vectors>"],
                                             "sparse": [] if q.mode == "semantic" else sparse_texts}}
        with self._lock, _BLAS.limit(limits=1, user_api="blas"):
            return self._search_locked(q, [unit(v) for v in vectors], trace)
