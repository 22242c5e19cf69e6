"""`Analyzer`: Save & Analyze for a draft or a note - unlinked mentions, related notes not yet linked, typed
link suggestions, type and tags, and a possible duplicate. It only reads: nothing here writes a note.

Cost: the text's chunks are embedded once (a note's stored vectors and the embedding cache are reused, and a
long draft embeds at most `related.max_chunks` chunks of `max_words`; BM25 reads all of them), then one search.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import numpy as np

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.classify import neighbours, suggest_tags, suggest_type
from mindnet.analysis.duplicates import find_duplicate
from mindnet.analysis.mentions import find_mentions
from mindnet.analysis.models import (
    AnalysisResult,
    LinkSuggestion,
    MentionSuggestion,
    RelatedSuggestion,
    Relation,
    SourceInfo,
)
from mindnet.analysis.related import related_notes, search_notes
from mindnet.analysis.relations import RelationRules, parse_llm_kinds, refined
from mindnet.analysis.source import AnalysisSource, draft_source, note_source
from mindnet.backends import Embedder
from mindnet.errors import LLMUnavailableError, MindnetError, QueryError
from mindnet.indexing.node_parser import (
    EMBED_FIELDS,
    MarkdownNoteParser,
    embedding_input,
    embedding_text,
)
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.settings import Settings
from mindnet.store.collections import point_id
from mindnet.store.engine import Store

log = logging.getLogger(__name__)


def _unit_rows(vectors: list[list[float]]) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def spread(count: int, limit: int) -> list[int]:
    """`limit` indexes spread evenly over range(count) (all of them when count <= limit)."""
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)}) if limit > 1 else [0]


class Analyzer:
    def __init__(self, *, settings: Settings, store: Store, retriever: MindnetRetriever, embedder: Embedder,
                 lock: threading.Lock | None = None, gate: Any = None) -> None:
        self.settings = settings
        self.config = settings.analysis
        self.store = store
        self.retriever = retriever
        self.embedder = embedder
        self.lock = lock or threading.Lock()
        self.gate = gate                       # chat.llm.LLMGate, or None: rules only
        self.parser = MarkdownNoteParser.from_config(settings.types)
        self.rules = RelationRules(self.config.relations, settings.types)
        self._catalog: Catalog | None = None

    def invalidate(self) -> None:
        """Forget the note catalog (call after an import)."""
        self._catalog = None

    def catalog(self) -> Catalog:
        if self._catalog is None:
            with self.lock:
                self._catalog = Catalog.load(self.store, self.settings.types.mentions)
        return self._catalog

    # ------------------------------------------------------------------ the text

    def source(self, *, text: str | None, note: str | None, path: str | None = None,
               note_type: str | None = None) -> AnalysisSource:
        if (text is None) == (note is None):
            raise QueryError("give either `text` (a Markdown draft) or `note` (a note id or path), not both",
                             field="text" if text is None else "note")
        catalog = self.catalog()
        if note is not None:
            return note_source(note, settings=self.settings, catalog=catalog, parser=self.parser)
        return draft_source(text or "", settings=self.settings, catalog=catalog, parser=self.parser, path=path,
                            note_type=note_type)

    def _stored_vectors(self, chunk_ids: list[str]) -> dict[str, tuple[str, list[float], int]]:
        """chunk id -> (embedded text, vector, words of the chunk's own text) as the index holds them."""
        if not chunk_ids:
            return {}
        with self.lock:
            records = self.store.retrieve("chunks", [point_id(c) for c in chunk_ids],
                                          payload=["chunk_id", *EMBED_FIELDS], dense=True)
        out = {}
        for r in records:
            if r.dense is not None:
                words = len(str(r.payload.get("text", "")).split())
                out[str(r.payload.get("chunk_id"))] = (embedding_text(r.payload), r.dense.tolist(), words)
        return out

    def vectors(self, source: AnalysisSource) -> tuple[np.ndarray, int]:
        """Unit vectors of the text's chunks, and how many had to be embedded now. The index's own vectors
        serve every chunk it holds unchanged; of the rest at most `max_chunks`, spread evenly, are embedded,
        each cut to `max_words` words (the embedding model is the cost of an analysis; BM25 reads everything)."""
        cfg = self.config.related
        texts = [embedding_input(n) for n in source.nodes]
        stored = self._stored_vectors([n.node_id for n in source.nodes]) if source.indexed else {}
        vectors: list[list[float]] = []
        todo: list[str] = []
        for node, text in zip(source.nodes, texts, strict=True):
            hit = stored.get(node.node_id)
            if hit and hit[0] == text:
                vectors.append(hit[1])
            else:
                todo.append(text)
        if todo:
            picked = [" ".join(todo[i].split()[: cfg.max_words]) for i in spread(len(todo), cfg.max_chunks)]
            vectors += asyncio.run(self.embedder.aembed(picked, what="analyze"))
            return _unit_rows(vectors), len(picked)
        return _unit_rows(vectors), 0

    def note_vectors(self, note_ids: list[str], catalog: Catalog) -> dict[str, tuple[np.ndarray, int]]:
        """note id -> (its stored chunk vectors, its words)."""
        ids = {n: catalog.notes[n].chunk_ids for n in note_ids if n in catalog.notes}
        stored = self._stored_vectors([c for cs in ids.values() for c in cs])
        return {n: (_unit_rows([stored[c][1] for c in cs if c in stored]), sum(stored[c][2] for c in cs if c in stored))
                for n, cs in ids.items() if any(c in stored for c in cs)}

    # ------------------------------------------------------------------ the analysis

    def analyze(self, *, text: str | None = None, note: str | None = None, path: str | None = None,
                note_type: str | None = None, limit: int | None = None, llm: bool | None = None
                ) -> AnalysisResult:
        timing: dict[str, float] = {}
        t = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal t
            now = time.perf_counter()
            timing[name] = round(1000 * (now - t), 1)
            t = now

        limit = self.config.limit if limit is None else limit
        if not 1 <= limit <= 100:
            raise QueryError(f"must be between 1 and 100, got {limit}", field="limit")
        source = self.source(text=text, note=note, path=path, note_type=note_type)
        catalog = self.catalog()
        if not source.nodes:
            raise QueryError("the text has no body to analyse (only frontmatter or a title); write some text",
                             field="text" if text is not None else "note")
        lap("parse")
        vectors, embedded = self.vectors(source)
        lap("embed")
        matches = search_notes(self.retriever, list(vectors), [n.get_content() for n in source.nodes],
                               title=source.note.title, settings=self.config.related)
        lap("search")
        mentions = find_mentions(source.text, source.body_offset, catalog=catalog, exclude=source.excluded,
                                 settings=self.config.mentions)
        related = related_notes(matches, catalog=catalog, exclude=source.excluded, limit=max(20, 2 * limit),
                                settings=self.config.related)
        links = self._links(source, catalog, mentions, related, limit)
        lap("links")
        links, llm_info = self._refine(source, links, llm)
        lap("llm")
        own = {source.indexed.note_id} if source.indexed else set()
        near = neighbours(matches, own, self.config.neighbours.count)
        type_ = suggest_type(source, near, catalog, self.settings.types)
        tags = suggest_tags(source, near, catalog, self.config.neighbours)
        cands = near[: self.config.duplicates.candidates]
        duplicate = find_duplicate(vectors, len(source.note.body.split()), cands,
                                   self.note_vectors([m.note_id for m in cands], catalog), catalog,
                                   self.config.duplicates)
        lap("type_tags_duplicate")
        timing["total"] = round(sum(timing.values()), 1)
        info = SourceInfo(kind=source.kind, title=source.note.title, path=source.indexed.path if source.indexed else
                          (None if source.kind == "draft" and source.note.path.endswith("draft.md")
                           else source.note.path),
                          note_id=source.indexed.note_id if source.indexed else None, type=source.note.type,
                          linked=sorted(source.linked), chunks=len(source.nodes), embedded=embedded)
        problem = source.note.frontmatter_error   # the import reads such a note body-only, and so does this
        warnings = [*source.note.warnings, *([str(problem)] if problem else [])]
        return AnalysisResult(source=info, links=links, mentions=mentions, related=related[:limit], type=type_,
                              tags=tags, duplicate=duplicate, llm=llm_info, warnings=warnings, timing_ms=timing)

    async def aanalyze(self, **kwargs: Any) -> AnalysisResult:
        return await asyncio.to_thread(self.analyze, **kwargs)

    def _links(self, source: AnalysisSource, catalog: Catalog, mentions: list[MentionSuggestion],
               related: list[RelatedSuggestion], limit: int) -> list[LinkSuggestion]:
        by_note: dict[str, dict[str, Any]] = {}
        for m in mentions:
            entry = by_note.setdefault(m.note_id, {"spans": [], "mention": None, "related": None})
            entry["spans"].append(m.span)
            if entry["mention"] is None or m.confidence > entry["mention"].confidence:
                entry["mention"] = m
        for r in related:
            by_note.setdefault(r.note_id, {"spans": [], "mention": None, "related": None})["related"] = r
        out = []
        for note_id, e in by_note.items():
            note = catalog.notes[note_id]
            m, r = e["mention"], e["related"]
            conf = 1.0 - (1.0 - (m.confidence if m else 0.0)) * (1.0 - (r.confidence if r else 0.0))
            if conf < self.config.min_confidence:
                continue
            relation = self.rules.classify(text=source.text, spans=e["spans"], source_type=source.note.type,
                                           target_type=note.type)
            link_text = catalog.link_text(note)
            out.append(LinkSuggestion(
                note_id=note_id, title=note.title, path=note.path, type=note.type, link_text=link_text,
                confidence=round(conf, 4), reason="; ".join(x.reason for x in (m, r) if x),
                sources=[s for s, x in (("mention", m), ("related", r)) if x], mentions=e["spans"],
                relation=relation, callout=callout_line(relation.kind, [link_text])))
        out.sort(key=lambda s: (-s.confidence, s.title, s.note_id))
        return out[:limit]

    def _refine(self, source: AnalysisSource, links: list[LinkSuggestion], llm: bool | None
                ) -> tuple[list[LinkSuggestion], dict[str, Any]]:
        if not links:
            return links, {"used": False, "reason": "no links to type"}
        if llm is False or self.config.relations.llm == "off":
            why = "off in this request" if llm is False else "relations.llm is off in analysis.yaml"
            return links, {"used": False, "reason": why}
        if self.gate is None:
            return links, {"used": False, "reason": "no LLM configured"}
        status = self.gate.status()
        if not status.available:
            return links, {"used": False, "reason": status.reason}
        from mindnet.chat.prompts import load_prompt
        try:
            prompt = load_prompt("relation_kinds", self.settings.prompts_dir).format(
                kinds=", ".join(self.rules.kinds), title=source.note.title, text=source.note.body[:3000],
                links="\n".join(f"{i}. {s.title} ({s.type}) - {s.relation.kind}" for i, s in enumerate(links, 1)))
            reply = self.gate.complete(prompt)
        except (LLMUnavailableError, MindnetError) as exc:
            return links, {"used": False, "reason": str(exc)}
        chosen = parse_llm_kinds(reply, len(links), self.rules.kinds)
        out = []
        for i, s in enumerate(links, 1):
            rel: Relation = refined(s.relation, chosen.get(i))
            out.append(s.model_copy(update={"relation": rel, "callout": callout_line(rel.kind, [s.link_text])}))
        return out, {"used": True, "model": self.settings.llm_model, "answered": len(chosen), "of": len(links)}


def callout_line(kind: str, targets: list[str]) -> str:
    return f"> [!edge] {kind}: " + " ".join(f"[[{t}]]" for t in targets)
