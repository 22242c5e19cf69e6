"""Ranking for `GraphSearch`: rank the fused candidates by the formula (`HitScorer`), then build hits (with score
breakdown and explanation) only for the ones shown: one per note when grouping by note, its other matching
chunks listed under it as `passages`. Plain data: `MindnetRetriever` wraps the hits into LlamaIndex nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mindnet.retrieval.candidates import Candidate
from mindnet.retrieval.graph import Subgraph
from mindnet.retrieval.hit_scorer import SEMANTIC_KEY, HitScorer
from mindnet.retrieval.hits import Hit, chunk_text, hit_from_payload
from mindnet.retrieval.query import ResolvedQuery
from mindnet.retrieval.scoring import Terms, rank_key

MAX_PASSAGES = 5        # other matching chunks listed under a note-level hit


class Titles(dict):
    """Note titles for explanations: the shown hits' own (this dict) over every note's from the link graph (not
    copied). A ChainMap did the same at a generator per lookup, ~250 lookups per depth-1 query."""

    def __init__(self, base: Mapping[str, str] | None) -> None:
        super().__init__()
        self.base: Mapping[str, str] = base if base is not None else {}

    def get(self, key: str, default: Any = None) -> Any:   # type: ignore[override]
        own = dict.get(self, key)
        return own if own is not None else self.base.get(key, default)

    def add(self, key: str, title: str) -> None:
        """A hit's own title, for a note the link graph does not name."""
        if key not in self.base:
            self.setdefault(key, title)


def passage(payload: dict[str, Any], point_id: str, score: float) -> dict[str, Any]:
    """One of a note's other matching chunks, straight from its payload: listed under the note's hit, it needs
    no node or explanation of its own (building those for every passage cost more than the graph, measured on
    the sample vault: ~32 passages per query)."""
    text = chunk_text(payload)
    return {"node_id": payload.get("chunk_id", point_id), "ord": payload.get("ord", 0),
            "heading_path": payload.get("heading_path", []), "score": score, "text": text}


def with_passages(head: Hit, passages: list[dict[str, Any]]) -> Hit:
    """The note-level hit: its best chunk, with the note's other matching chunks in reading order as
    metadata `passages` (kept out of the LLM and embedding metadata text by `MindnetRetriever`)."""
    return Hit(node_id=head.node_id, text=head.text, score=head.score, payload=head.payload,
               metadata={**head.metadata, "passages": sorted(passages, key=lambda p: p["ord"])})


def to_hit(c: Candidate, *, hybrid: bool) -> Hit:
    """`lexical` is None in semantic mode: no BM25 score was computed, so none is shown."""
    hit = hit_from_payload(c.payload, c.semantic)
    hit.metadata[SEMANTIC_KEY] = {"semantic": c.semantic, "dense": c.dense if c.embedded else None,
                                  "lexical": c.lexical if hybrid else None, "via_graph": c.via_graph,
                                  "embedded": c.embedded}
    return hit


def score_hits(q: ResolvedQuery, cands: list[Candidate], subgraph: Subgraph | None, *, scorer: HitScorer,
               other_types_weight: float, rerank_limit: int, link_titles: Mapping[str, str] | None,
               complete: Callable[[list[Candidate]], None]) -> tuple[list[Hit], list[Hit]]:
    """Rank every candidate by the formula (with the graph's lift cap), then build hits and explanations only
    for the ones shown. Returns the shown hits (one per note when grouping by note, its other matching
    chunks as `passages`) and, for per-note aggregation, every chunk's hit.

    `link_titles`: every note's title, from the link graph (None without a subgraph); `complete` reads the full
    payload of the brief candidates about to be shown."""
    hybrid = q.mode == "hybrid"
    # a which-question asking for a type present among the candidates damps the other types (intent.py)
    asked = [t for t in q.asked_types if any(c.payload.get("type") == t for c in cands)]
    entries: list[tuple[str, Terms]] = []
    for c in cands:
        note_id = str(c.payload.get("note_id", ""))
        entries.append((note_id, scorer.terms(
            semantic=c.semantic, dense=c.dense if c.embedded else None, lexical=c.lexical if hybrid else None,
            other_language=c.other_language,
            retriever_weight=float(c.payload.get("retriever_weight", 1.0)), note_id=note_id,
            subgraph=subgraph,
            type_intent=1.0 if not asked or c.payload.get("type") in asked else other_types_weight)))
    ranked = sorted(zip(cands, scorer.cap(entries, subgraph), strict=True),
                    key=lambda r: (*rank_key(r[1][0]), str(r[0].payload.get("chunk_id", r[0].point_id))))
    # every note's title names the other ends of edges; the hits' own titles are added on top (no copy)
    titles = Titles(link_titles)
    finished: dict[str, Hit] = {}

    def node(item: tuple[Candidate, tuple[Terms, str | None]]) -> Hit:
        c, (b, by) = item
        if c.point_id not in finished:
            titles.add(str(c.payload.get("note_id", "")), str(c.payload.get("title", "")))
            hit = to_hit(c, hybrid=hybrid)
            hit.metadata = scorer.result_metadata(hit.metadata, hit.node_id, b, subgraph, titles, by, asked)
            hit.score = b.total
            finished[c.point_id] = hit
            if not c.embedded:
                finished[c.point_id].metadata["explanation"]["reasons"].insert(
                    1, "not embedded yet (the import is still adding vectors): ranked by keywords and links only")
        return finished[c.point_id]

    keep = max(q.top_k, rerank_limit if q.rerank else 0)
    heads: dict[str, Any] = {}
    others: dict[str, list[Any]] = {}
    if q.group != "chunk":
        for r in ranked:
            nid = str(r[0].payload.get("note_id", r[0].point_id))
            if nid in heads:
                others[nid].append(r)
            elif len(heads) < keep:
                heads[nid], others[nid] = r, []
    shown = ranked if q.aggregate else ranked[:keep] if q.group == "chunk" else \
        [x for nid, r in heads.items() for x in (r, *others[nid][:MAX_PASSAGES])]
    complete([c for c, _ in shown])
    all_chunks = [node(r) for r in ranked] if q.aggregate else []
    if q.group == "chunk":
        return [node(r) for r in ranked[: len(ranked) if q.aggregate else keep]], all_chunks
    return [with_passages(node(r), [passage(c.payload, c.point_id, b.total) for c, (b, _) in
                                    others[nid][:MAX_PASSAGES]])
            for nid, r in heads.items()], all_chunks
