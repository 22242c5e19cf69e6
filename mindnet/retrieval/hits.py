"""mindnet's own hits: a scored chunk as plain data (no LlamaIndex), and per-note aggregation of chunk scores.

`GraphSearch` (search.py) returns `Hit`s; `MindnetRetriever` wraps each into the LlamaIndex `NodeWithScore` it
always returned (`retriever.to_node`). A hit's `metadata` is exactly that node's metadata: the chunk's node
metadata as the import stored it (the `_node_content` of its payload), then `mindnet_semantic`,
`score_breakdown` and `explanation` (and `passages` for a note-level hit).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import mean
from typing import Any

from pydantic import BaseModel


@dataclass
class Hit:
    """One scored chunk. `node_id` is the chunk's point id (the node's id), `text` its text, `payload` what
    the index stores for it (a node is rebuilt from it), `score` the total of its `score_breakdown`."""

    node_id: str
    text: str
    metadata: dict[str, Any]
    score: float | None
    payload: dict[str, Any]


def stored_node(payload: dict[str, Any]) -> dict[str, Any]:
    """The node the import stored in a chunk's payload (`_node_content`, as LlamaIndex's vector stores write
    it), as a dict: its `id_`, `text` and `metadata`."""
    content = payload.get("_node_content")
    if content is None:
        raise ValueError("Node content not found in metadata dict.")
    return json.loads(content)


def hit_from_payload(payload: dict[str, Any], score: float | None) -> Hit:
    node = stored_node(payload)
    return Hit(node_id=str(node.get("id_")), text=str(node.get("text", "")), metadata=dict(node.get("metadata") or {}),
               score=score, payload=payload)


def chunk_text(payload: dict[str, Any]) -> str:
    """A chunk's text from its payload (the stored node's text when the payload has no `text` field)."""
    text = payload.get("text")
    return text if text is not None else str(stored_node(payload).get("text", ""))


class NoteHit(BaseModel):
    note_id: str
    title: str
    path: str
    type: str
    score: float
    chunk_ids: list[str]


AGGREGATORS = {"sum": sum, "max": max, "mean": mean}


def aggregate(chunks: Iterable[tuple[str, dict[str, Any], float | None]], method: str = "max") -> list[NoteHit]:
    """Note-level results from (node id, metadata, score) per chunk: each note's score is the sum, max or mean
    of its chunks' scores, best first."""
    groups: dict[str, list[tuple[str, dict[str, Any], float | None]]] = defaultdict(list)
    for node_id, meta, score in chunks:
        groups[meta.get("note_id", node_id)].append((node_id, meta, score))
    hits = []
    for note_id, group in groups.items():
        meta = group[0][1]
        score = float(AGGREGATORS[method]([s or 0.0 for _, _, s in group]))
        hits.append(NoteHit(note_id=note_id, title=meta.get("title", ""), path=meta.get("path", ""),
                            type=meta.get("type", ""), score=score,
                            chunk_ids=[m.get("chunk_id", nid) for nid, m, _ in group]))
    hits.sort(key=lambda h: (-h.score, h.note_id))
    return hits


def aggregate_hits(hits: list[Hit], method: str = "max") -> list[NoteHit]:
    return aggregate(((h.node_id, h.metadata, h.score) for h in hits), method)
