"""A tiny hand-built index for the retrieval tests: notes with hand-set 4-d vectors, edges written directly.

`build_index(store, notes, edges)` writes chunks as the importer does (`chunk_points`: its payloads and BM25
vectors), note records (titles for explanations) and edge payloads, into a real store (Qdrant Edge in a temp
folder unless a test passes another). `DictEmbedding` answers each query
text with the vector the test set for it, so exact orders can be asserted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from pydantic import Field

from mindnet.indexing.edges import Edge
from mindnet.indexing.node_parser import chunk_id
from mindnet.indexing.vectors import chunk_points
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.settings import RetrieverConfig
from mindnet.store.collections import point_id
from mindnet.store.engine import Point, Store
from mindnet.store.factory import TemporaryEdgeStore

PREFIX = "t"
DIM = 4


def unit(*components: float) -> list[float]:
    """A unit vector (padded to DIM) pointing along `components`."""
    values = list(components) + [0.0] * (DIM - len(components))
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def at_cos(c: float) -> list[float]:
    """A unit vector whose cosine with the query axis `unit(1)` is exactly `c`."""
    return [c, math.sqrt(max(0.0, 1.0 - c * c)), 0.0, 0.0]


Q = unit(1)   # the query vector of most tests


class DictEmbedding(BaseEmbedding):
    """Vectors set per text; an unknown text is an error (a test must not embed what it did not plan)."""

    vectors: dict[str, list[float]] = Field(default_factory=dict)
    seen: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "DictEmbedding"

    def _vector(self, text: str) -> list[float]:
        self.seen.append(text)
        if text not in self.vectors:
            raise KeyError(f"DictEmbedding: no vector set for {text!r}")
        return list(self.vectors[text])

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


@dataclass
class NoteSpec:
    note_id: str
    vectors: Sequence[Sequence[float]]          # one per chunk
    texts: Sequence[str] = ()                   # default: "<note_id> chunk <n>"
    type: str = "concept"
    weight: float = 1.0
    tags: list[str] = field(default_factory=list)
    path: str | None = None
    title: str | None = None
    lang: str = ""                              # the note's language, as the parser detects it

    @property
    def the_title(self) -> str:
        return self.title or self.note_id.replace("-", " ").title()

    @property
    def the_path(self) -> str:
        return self.path or f"{self.note_id}.md"


def link(src: str, dst: str, kind: str = "references", confidence: float = 1.0,
         rule_id: str = "explicit:wikilink", chunk: int = 1) -> Edge:
    """An edge from chunk `chunk` of note `src` to note `dst`, as derive_edges writes it."""
    return Edge(chunk_id(src, chunk), dst, kind, rule_id, confidence, src, target_text=dst)


def chunk_nodes(spec: NoteSpec) -> list[TextNode]:
    nodes = []
    ids = [chunk_id(spec.note_id, i + 1) for i in range(len(spec.vectors))]
    for i, vec in enumerate(spec.vectors):
        text = spec.texts[i] if i < len(spec.texts) else f"{spec.note_id} chunk {i + 1}"
        meta: dict[str, Any] = {
            "chunk_id": ids[i], "note_id": spec.note_id, "ord": i + 1, "title": spec.the_title,
            "path": spec.the_path, "type": spec.type, "retriever_weight": spec.weight,
            "tags": list(spec.tags),
            "text": text, "window": text, "heading_path": [], "lang": spec.lang}
        node = TextNode(id_=ids[i], text=text, metadata=meta, embedding=list(vec),
                        excluded_embed_metadata_keys=[k for k in meta if k != "title"],
                        excluded_llm_metadata_keys=[k for k in meta if k != "title"])
        nodes.append(node)
    return nodes


def build_index(store: Store, notes: Sequence[NoteSpec], edges: Sequence[Edge] = (), dim: int = DIM) -> None:
    store.create(dim)
    nodes = [n for spec in notes for n in chunk_nodes(spec)]
    store.upsert("chunks", chunk_points(nodes, {n.node_id: list(n.embedding or []) for n in nodes}))
    store.upsert("notes", [Point(point_id(s.note_id), {
        "note_id": s.note_id, "title": s.the_title, "type": s.type, "path": s.the_path, "tags": s.tags,
        "retriever_weight": s.weight, "lang": s.lang,
        "chunk_ids": [chunk_id(s.note_id, i + 1) for i in range(len(s.vectors))]}) for s in notes])
    store.upsert("edges", [Point(point_id(e.edge_id), e.payload()) for e in edges])


def config(**changes: Any) -> RetrieverConfig:
    """retriever.yaml's values (weights 1.0 / 0.3 / 0.2, alpha 0.5), with dotted keys replaced."""
    data: dict[str, Any] = {
        "mode": "hybrid", "top_k": 10, "max_top_k": 50,
        "scoring": {"semantic_weight": 1.0, "edge_weight": 0.3, "centrality_weight": 0.2},
        "expand": {"depth": 1, "seeds": 10, "max_nodes": 400,
                   "edge_types": ["references", "depends_on", "related_to", "mentions"]},
        "hybrid": {"dense_prefetch": 50, "sparse_prefetch": 50, "alpha": 0.5},
        "rerank": {"enabled": False, "limit": 20},
        "graph": {"hub_degree": 10.0, "chance": 0.0},
    }
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return RetrieverConfig.model_validate(data)


def make_retriever(notes: Sequence[NoteSpec], edges: Sequence[Edge] = (), *,
                   queries: dict[str, list[float]] | None = None, cfg: RetrieverConfig | None = None,
                   store: Store | None = None, **kwargs: Any) -> MindnetRetriever:
    """A retriever over a fresh index (Qdrant Edge in a temp folder unless `store` is given); `queries` maps
    query texts to vectors (default: "q" -> Q)."""
    store = store or TemporaryEdgeStore(PREFIX)
    build_index(store, notes, edges)
    embed = DictEmbedding(vectors=queries or {"q": Q})
    return MindnetRetriever(store=store, embed_model=embed, config=cfg or config(), **kwargs)


def order(nodes: Sequence[Any]) -> list[str]:
    """Chunk ids of retrieved nodes, in order."""
    return [n.node.metadata["chunk_id"] for n in nodes]


def note_order(nodes: Sequence[Any]) -> list[str]:
    return [n.node.metadata["note_id"] for n in nodes]
