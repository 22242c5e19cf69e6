"""Possible duplicate: an indexed note that already holds what the text says, at about the same length.

Similarity = the mean, over the text's embedded chunks, of the best cosine to any chunk of the note; the note
must also be of similar length (0.5x to 2x the text's words): a draft that quotes one paragraph of a long note
is not its duplicate, a copy with small edits is. (Only one direction is compared because a long draft embeds
just a sample of its chunks; the length check stands in for the other direction.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.models import DuplicateSuggestion
from mindnet.analysis.related import NoteMatch
from mindnet.settings import AnalysisDuplicates

LENGTH_RATIO = (0.5, 2.0)


def covered(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Mean over our unit rows of the best cosine to their unit rows."""
    return float((ours @ theirs.T).max(axis=1).mean())


def find_duplicate(vectors: np.ndarray, words: int, near: Sequence[NoteMatch],
                   stored: dict[str, tuple[np.ndarray, int]], catalog: Catalog,
                   settings: AnalysisDuplicates) -> DuplicateSuggestion | None:
    """`near`: candidate notes, nearest first; `stored`: their chunk vectors (unit rows) and words by note id."""
    best: tuple[float, str, int] | None = None
    for m in near[: settings.candidates]:
        theirs, their_words = stored.get(m.note_id, (None, 0))
        if theirs is None or not len(theirs) or not words:
            continue
        if not LENGTH_RATIO[0] <= their_words / words <= LENGTH_RATIO[1]:
            continue
        sim = covered(vectors, theirs)
        if best is None or sim > best[0]:
            best = (sim, m.note_id, their_words)
    if best is None or best[0] < settings.threshold:
        return None
    sim, note_id, their_words = best
    note = catalog.notes[note_id]
    span = max(1e-9, 1.0 - settings.threshold)
    return DuplicateSuggestion(
        note_id=note_id, title=note.title, path=note.path, similarity=round(sim, 4),
        confidence=round(min(1.0, 0.5 + 0.5 * (sim - settings.threshold) / span), 4),
        reason=f"it holds this text's content at cosine {sim:.3f} (threshold {settings.threshold}) at a similar "
               f"length ({their_words} vs {words} words); consider extending '{note.title}' instead")
