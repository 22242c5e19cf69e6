"""Related notes: the retriever's hybrid search with the text's chunk vectors and chunk texts (BM25), then graph
expansion around the best candidates; grouped by note, the note itself and what it links to left out.

The scorer's breakdown of each note's best chunk is the reason, so a suggestion explains itself with the same
numbers a search hit shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.models import RelatedSuggestion
from mindnet.retrieval.query import QueryRequest, ResolvedQuery
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.settings import AnalysisRelated


@dataclass
class NoteMatch:
    """A note's best chunk among the hits."""

    note_id: str
    chunk_id: str
    score: float
    dense: float
    breakdown: dict[str, Any]
    explanation: dict[str, Any]
    meta: dict[str, Any]


def search_notes(retriever: MindnetRetriever, vectors: list[np.ndarray], texts: list[str], *, title: str,
                 settings: AnalysisRelated) -> list[NoteMatch]:
    """Every note among the best `candidates` chunks, best first (no exclusions yet)."""
    request = QueryRequest(query=(title or "draft")[:2000], mode=settings.mode)
    config = retriever.config
    q = ResolvedQuery(request=request, mode=settings.mode, top_k=settings.candidates,
                      depth=settings.depth if settings.mode == "hybrid" else 0,
                      edge_types=list(config.expand.edge_types), rerank=False)
    result = retriever.search_vectors(q, vectors, texts)
    best: dict[str, NoteMatch] = {}
    for n in result.nodes:
        meta = n.node.metadata
        note_id = str(meta.get("note_id", ""))
        if not note_id or note_id in best:
            continue
        sem = meta.get("mindnet_semantic") or {}
        best[note_id] = NoteMatch(note_id=note_id, chunk_id=str(meta.get("chunk_id", "")), score=float(n.score or 0),
                                  dense=float(sem.get("dense") or 0.0), breakdown=meta.get("score_breakdown") or {},
                                  explanation=meta.get("explanation") or {}, meta=meta)
    return list(best.values())


def _reason(m: NoteMatch) -> str:
    b = m.breakdown
    parts = [f"similar content {b.get('semantic', 0):.2f}"]
    if b.get("dense") is not None and b.get("lexical") is not None:
        parts[0] += f" (dense {b['dense']:.2f}, BM25 {b['lexical']:.2f})"
    if b.get("edge_term"):
        parts.append(f"linked from the best matches (+{b['edge_term']:.2f})")
    if b.get("centrality_term"):
        parts.append(f"central in their graph (+{b['centrality_term']:.2f})")
    if (m.explanation or {}).get("via_graph"):
        parts.append("found through the graph")
    return f"score {m.score:.2f}: " + ", ".join(parts)


def related_notes(matches: list[NoteMatch], *, catalog: Catalog, exclude: set[str], limit: int,
                  settings: AnalysisRelated) -> list[RelatedSuggestion]:
    keep = [m for m in matches if m.note_id not in exclude and m.note_id in catalog.notes][:limit]
    if not keep:
        return []
    top = max(keep[0].score, 1e-9)
    out = []
    for m in keep:
        note = catalog.notes[m.note_id]
        conf = settings.max_confidence * max(0.0, min(1.0, m.score / top))
        out.append(RelatedSuggestion(note_id=m.note_id, title=note.title, path=note.path, type=note.type,
                                     score=round(m.score, 4), confidence=round(conf, 4), reason=_reason(m),
                                     chunk_id=m.chunk_id, score_breakdown=m.breakdown))
    return out
