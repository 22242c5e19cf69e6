"""Hits as plain data: the one shape the CLI, the HTTP API, the chat UI and the logs all show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import NodeWithScore

from mindnet.retrieval.retriever import RetrievalResult


def written_title(hit: Mapping[str, Any]) -> str | None:
    """The written title shown beside a hit's name: its first extra name (frontmatter title or first heading)
    when that says more than the name in another case; None for "Qdrant" beside qdrant.md."""
    name = str(hit.get("title") or hit.get("note_id") or "?")
    written = [str(n) for n in hit.get("names") or [] if str(n).strip()]
    return written[0] if written and written[0].casefold() != name.casefold() else None


def shown_name(hit: Mapping[str, Any]) -> str:
    """A hit's note as it is shown: its name (the file name) with its written title beside it
    ("rag-paper-lewis-2020 (Lewis et al. 2020 ...)"), never instead of it."""
    name = str(hit.get("title") or hit.get("note_id") or "?")
    beside = written_title(hit)
    return f"{name} ({beside})" if beside else name


def hit_dict(n: NodeWithScore, *, explain: bool = True) -> dict[str, Any]:
    meta = n.node.metadata
    hit = {
        "node_id": meta.get("chunk_id", n.node.node_id), "note_id": meta.get("note_id"),
        "title": meta.get("title"), "names": list(meta.get("names") or []), "path": meta.get("path"),
        "type": meta.get("type"),
        "heading_path": meta.get("heading_path", []), "score": n.score, "text": meta.get("text", n.node.get_content()),
        "score_breakdown": meta.get("score_breakdown"),
    }
    if "passages" in meta:
        hit["passages"] = meta["passages"]
    if explain:
        hit["explanation"] = meta.get("explanation")
    return hit


def result_dict(result: RetrievalResult, query_id: str, *, explain: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"query_id": query_id, "mode": result.query.mode, "top_k": result.query.top_k,
                           "group": result.query.group,
                           "hits": [hit_dict(n, explain=explain) for n in result.nodes], "trace": result.trace}
    if result.notes is not None:
        out["notes"] = [h.model_dump() for h in result.notes]
    return out
