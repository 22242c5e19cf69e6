"""The baseline every mindnet mode is measured against: what a LlamaIndex user gets without mindnet.

A `VectorStoreIndex` and a `VectorIndexRetriever` over the same chunk nodes and the same dense vectors, stored in
llama-index's `QdrantVectorStore` over an in-memory qdrant-client: plain dense top-k by cosine, no BM25, no
graph, no type weights, one node per chunk.
"""

from __future__ import annotations

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.retrievers import VectorIndexRetriever
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient

from mindnet.store.engine import Store


def plain_retriever(store: Store, embed_model: BaseEmbedding, top_k: int) -> VectorIndexRetriever:
    """The baseline over the chunks of `store` that have a dense vector (copied once, nothing is embedded)."""
    nodes = []
    for r in store.scroll("chunks", payload=True, dense=True):
        if r.dense is not None:
            node = metadata_dict_to_node(r.payload)
            node.embedding = r.dense.tolist()
            nodes.append(node)
    vector_store = QdrantVectorStore(client=QdrantClient(location=":memory:"), collection_name="plain")
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=vector_store),
                             embed_model=embed_model)
    return VectorIndexRetriever(index=index, similarity_top_k=top_k)
