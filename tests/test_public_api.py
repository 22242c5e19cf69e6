"""The public API is pinned: removing or renaming an export is a deliberate, visible change."""

import mindnet

EXPECTED = [
    "Explanation", "Importer", "MarkdownNoteParser", "Mindnet", "MindnetError", "MindnetRetriever",
    "MindnetScorer", "QueryRequest", "RetrievalResult", "ScoreBreakdown", "Settings", "SparseEncoder", "Store",
    "VaultTools", "aggregate_by_note", "cached_embedding", "chunk_vector_store", "expand", "make_embedding", "make_llm",
    "mindnet_tools", "open_store", "read_vault", "rerank_head_tail",
]


def test_all_is_pinned():
    assert mindnet.__all__ == EXPECTED


def test_every_export_resolves():
    for name in mindnet.__all__:
        assert getattr(mindnet, name) is not None, name


def test_llamaindex_bases():
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever

    assert issubclass(mindnet.MarkdownNoteParser, NodeParser)
    assert issubclass(mindnet.MindnetRetriever, BaseRetriever)
    assert issubclass(mindnet.MindnetScorer, BaseNodePostprocessor)
