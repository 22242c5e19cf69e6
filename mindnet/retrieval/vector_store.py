"""The chunks of a mindnet index as a LlamaIndex vector store, for your own pipelines.

`VectorStoreIndex.from_vector_store(chunk_vector_store(retriever.store), embed_model=...)` gives LlamaIndex's
plain dense retrieval over the index `mindnet ingest` built, on either engine (Qdrant Edge or a server). It
reads only: the index is written by mindnet's import, which keeps notes, chunks and edges consistent. (Over a
Qdrant server, llama-index's own `QdrantVectorStore` on `<prefix>_chunks` works too: same schema and vector
names.)
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from pydantic import PrivateAttr

from mindnet.errors import QueryError, StoreError
from mindnet.store.engine import Store, Where

FILTERABLE = ("type", "tags", "note_id", "chunk_id", "path", "folders")


def metadata_where(filters: MetadataFilters | None) -> Where | None:
    """LlamaIndex metadata filters (EQ or IN on an indexed field, joined by AND) as the store's filter."""
    if filters is None or not filters.filters:
        return None
    if str(filters.condition).lower().endswith("or") and len(filters.filters) > 1:
        raise QueryError("only AND-joined metadata filters are supported", field="filters")
    match = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters) or f.key not in FILTERABLE \
                or f.operator not in (FilterOperator.EQ, FilterOperator.IN):
            raise QueryError(f"unsupported filter {f!r}: use EQ or IN on one of {', '.join(FILTERABLE)}",
                             field="filters")
        values = f.value if isinstance(f.value, list) else [f.value]
        match.append((f.key, tuple(values)))
    return Where(match=tuple(match))


class ChunkVectorStore(BasePydanticVectorStore):
    """A read-only LlamaIndex vector store over a mindnet index's chunks (dense search, metadata filters)."""

    stores_text: bool = True
    _store: Store = PrivateAttr()

    def __init__(self, store: Store, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store = store

    @classmethod
    def class_name(cls) -> str:
        return "ChunkVectorStore"

    @property
    def client(self) -> Store:
        return self._store

    def add(self, nodes: list[BaseNode], **kwargs: Any) -> list[str]:
        raise StoreError("this vector store only reads the index; notes are written by the import "
                         "(`mindnet ingest`, or save them into the vault while `mindnet serve` follows it)")

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        raise StoreError("this vector store only reads the index; delete the note in the vault and import again")

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        if query.query_embedding is None:
            raise QueryError("a dense query needs query_embedding", field="query_embedding")
        where = metadata_where(query.filters)
        if query.doc_ids:
            where = Where.field("note_id", *query.doc_ids).and_(where)
        records = self._store.search_dense(query.query_embedding, query.similarity_top_k, where, payload=True)
        nodes = [metadata_dict_to_node(r.payload) for r in records]
        return VectorStoreQueryResult(nodes=nodes, similarities=[r.score for r in records],
                                      ids=[n.node_id for n in nodes])


def chunk_vector_store(store: Store) -> ChunkVectorStore:
    """The chunks of the index behind `store` (e.g. `retriever.store`) as a LlamaIndex vector store."""
    return ChunkVectorStore(store)
