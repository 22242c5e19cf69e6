"""mindnet: a local, graph-aware second brain for Obsidian-style Markdown vaults.

The public API: LlamaIndex components to plug into your own pipelines, and the factories behind them.
Names load lazily so `import mindnet` stays cheap for the CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "MarkdownNoteParser": "mindnet.indexing.node_parser",
    "read_vault": "mindnet.indexing.documents",
    "MindnetRetriever": "mindnet.retrieval.retriever",
    "RetrievalResult": "mindnet.retrieval.retriever",
    "MindnetScorer": "mindnet.retrieval.scorer",
    "ScoreBreakdown": "mindnet.retrieval.scoring",
    "Explanation": "mindnet.retrieval.scoring",
    "QueryRequest": "mindnet.retrieval.query",
    "expand": "mindnet.retrieval.graph",
    "rerank_head_tail": "mindnet.retrieval.postprocess",
    "aggregate_by_note": "mindnet.retrieval.postprocess",
    "Importer": "mindnet.indexing.pipeline",
    "chunk_vector_store": "mindnet.retrieval.vector_store",
    "SparseEncoder": "mindnet.indexing.sparse",
    "Mindnet": "mindnet.service",
    "Settings": "mindnet.settings",
    "make_embedding": "mindnet.backends",
    "cached_embedding": "mindnet.embeddings",
    "make_llm": "mindnet.backends",
    "open_store": "mindnet.store.factory",
    "Store": "mindnet.store.engine",
    "MindnetError": "mindnet.errors",
    "mindnet_tools": "mindnet.agents.llama",
    "VaultTools": "mindnet.agents.tools",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'mindnet' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return __all__
