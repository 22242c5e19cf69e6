"""Unlinked mentions with their offsets: the import's Aho-Corasick automaton over titles and aliases, with the
import's masking (code blocks, inline code and existing links blanked), on a text whose offsets stay valid."""

from __future__ import annotations

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.models import MentionSuggestion, Span
from mindnet.settings import AnalysisMentions
from mindnet.vault.links import mask_code, strip_links


def mask_keeping_offsets(text: str) -> str:
    """`mask_code` + `strip_links`, with blanked fenced lines padded so every offset still points to the same
    character (mask_code empties fenced lines; inline code and links it already replaces by spaces)."""
    masked = mask_code(text).split("\n")
    lines = text.split("\n")
    padded = [m if len(m) == len(o) else " " * len(o) for m, o in zip(masked, lines, strict=True)]
    return strip_links("\n".join(padded))


def fold_with_positions(text: str) -> tuple[str, list[int]]:
    """The case-folded text and, per folded character, its position in `text` ("ß" folds to two)."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        folded = ch.casefold()
        out.append(folded)
        where.extend([i] * len(folded))
    where.append(len(text))
    return "".join(out), where


def find_mentions(text: str, body_offset: int, *, catalog: Catalog, exclude: set[str],
                  settings: AnalysisMentions) -> list[MentionSuggestion]:
    """Every occurrence of another note's title or alias in the body (text[body_offset:]), in text order."""
    body = text[body_offset:]
    hay, where = fold_with_positions(mask_keeping_offsets(body))
    counts: dict[str, int] = {}
    found: list[tuple[int, int, str, tuple[str, ...]]] = []
    for start, end, key, ids in catalog.mention_index.spans(hay):
        ids = tuple(i for i in ids if i not in exclude)
        if ids:
            found.append((where[start], where[end] + 1, key, ids))
            for i in ids:
                counts[i] = counts.get(i, 0) + 1
    out = []
    for start, end, _key, ids in sorted(found):
        a, b = start + body_offset, end + body_offset
        span = Span(start=a, end=b, line=text.count("\n", 0, a) + 1, surface=text[a:b])
        for note_id in ids:
            note = catalog.notes[note_id]
            conf = settings.confidence / len(ids)
            conf = min(1.0, conf + min(0.2, settings.repeat_bonus * (counts[note_id] - 1)))
            shared = f", a name {len(ids)} notes share" if len(ids) > 1 else ""
            times = f" ({counts[note_id]} times)" if counts[note_id] > 1 else ""
            out.append(MentionSuggestion(
                note_id=note_id, title=note.title, path=note.path, span=span, confidence=round(conf, 4),
                reason=f"names '{note.title}' as '{span.surface}' without a link{times}{shared}"))
    return out
