"""Fusion for `MindnetRetriever`: each candidate's S_sem from its dense and BM25 scores.

semantic: S_sem = the cosine min-max normalised over the candidates.
hybrid:   S_sem = alpha * dense (min-max normalised) + (1 - alpha) * BM25 share, the BM25 share of a note in the
          other language than the question's raised to its dense share (language-fair fusion).
"""

from __future__ import annotations

from collections.abc import Iterable

from mindnet.indexing.sparse import text_language
from mindnet.retrieval.candidates import Candidate
from mindnet.retrieval.query import ResolvedQuery
from mindnet.settings import RetrieverConfig


def dense_bounds(cands: Iterable[Candidate]) -> tuple[float, float]:
    values = [c.dense for c in cands if c.embedded]
    return (min(values), max(values)) if values else (0.0, 1.0)


def language_split(q: ResolvedQuery, cands: Iterable[Candidate], config: RetrieverConfig) -> str | None:
    """The question's language when BM25 compares notes across languages: the question's language is decided
    (stopwords of one language) and the candidates hold notes in it and in the other language. Else None: in
    a vault of one language BM25 judges every note alike (an English question on German notes still matches
    their shared terms, "Qdrant", "DNS", and nothing is changed)."""
    if q.mode != "hybrid" or not config.hybrid.language_fair:
        return None
    lang = text_language(q.request.query)
    langs = {c.payload.get("lang") or "" for c in cands}
    return lang if lang is not None and lang in langs and langs - {lang, ""} else None


def fuse(q: ResolvedQuery, cands: Iterable[Candidate], lo: float, hi: float, alpha: float,
         split: str | None = None) -> None:
    """S_sem of each candidate. With a language `split`, a chunk of a note in the other language gets a lexical
    share of at least its dense share: BM25 cannot match its words to the question's, so the best keyword match
    in the question's language would otherwise push it down by up to (1 - alpha) however well it answers."""
    for c in cands:
        dn = min(1.0, max(0.0, (c.dense - lo) / (hi - lo))) if hi > lo else 1.0
        if q.mode == "semantic":   # min-max too: raw cosines sit in a narrow band, where W_type would decide
            c.semantic = dn if c.embedded else 0.0
        elif not c.embedded:   # no dense score to fuse yet: keywords alone (the graph adds its bonus)
            c.semantic = c.lexical
        else:
            lang = c.payload.get("lang") or ""
            c.other_language = split is not None and lang not in (split, "") and dn > c.lexical
            c.semantic = alpha * dn + (1 - alpha) * (dn if c.other_language else c.lexical)
