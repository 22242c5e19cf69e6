"""Possible duplicate: an indexed note whose content matches the text chunk by chunk, both ways.

Score = min(mean over the text's chunks of the best cosine to the note's chunks, the same the other way): a draft
that only quotes one paragraph of a long note is not its duplicate, a copy with small edits is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.models import DuplicateSuggestion
from mindnet.analysis.related import NoteMatch
from mindnet.settings import AnalysisDuplicates


def mutual_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Both matrices hold unit row vectors."""
    sims = a @ b.T
    return float(min(sims.max(axis=1).mean(), sims.max(axis=0).mean()))


def find_duplicate(vectors: np.ndarray, near: Sequence[NoteMatch], chunk_vectors: dict[str, np.ndarray],
                   catalog: Catalog, settings: AnalysisDuplicates) -> DuplicateSuggestion | None:
    """`near`: candidate notes, nearest first; `chunk_vectors`: their stored chunk vectors (unit) by note id."""
    best: tuple[float, str] | None = None
    for m in near[: settings.candidates]:
        theirs = chunk_vectors.get(m.note_id)
        if theirs is None or not len(theirs):
            continue
        sim = mutual_similarity(vectors, theirs)
        if best is None or sim > best[0]:
            best = (sim, m.note_id)
    if best is None or best[0] < settings.threshold:
        return None
    sim, note_id = best
    note = catalog.notes[note_id]
    span = max(1e-9, 1.0 - settings.threshold)
    return DuplicateSuggestion(
        note_id=note_id, title=note.title, path=note.path, similarity=round(sim, 4),
        confidence=round(min(1.0, 0.5 + 0.5 * (sim - settings.threshold) / span), 4),
        reason=f"its chunks and this text's match at cosine {sim:.3f} (threshold {settings.threshold}); "
               f"consider extending '{note.title}' instead of adding a second note")
