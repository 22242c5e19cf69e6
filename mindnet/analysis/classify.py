"""Type and tags for a text: the type from a types.yaml path rule when the text has a place in the vault,
otherwise (and the tags always) by a vote of the nearest notes, weighted by their similarity."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch

from mindnet.analysis.catalog import Catalog
from mindnet.analysis.models import TagSuggestion, TypeSuggestion
from mindnet.analysis.related import NoteMatch
from mindnet.analysis.source import DRAFT_NAME, AnalysisSource
from mindnet.settings import AnalysisNeighbours, TypesConfig


def path_rule(path: str, types: TypesConfig) -> tuple[str, str] | None:
    """(type, pattern) of the first path rule matching `path`, as the import applies them."""
    for name, spec in types.types.items():
        for pattern in spec.paths:
            if fnmatch(path, pattern) or fnmatch(path.lower(), pattern.lower()):
                return name, pattern
    return None


def neighbours(matches: Sequence[NoteMatch], own: set[str], count: int) -> list[NoteMatch]:
    """The nearest notes by dense similarity (linked ones included: they say what the text is about)."""
    return sorted((m for m in matches if m.note_id not in own), key=lambda m: -m.dense)[:count]


def suggest_type(source: AnalysisSource, near: Sequence[NoteMatch], catalog: Catalog,
                 types: TypesConfig) -> TypeSuggestion | None:
    note = source.note
    written = note.frontmatter.get("type")
    placed = note.path != DRAFT_NAME
    current = note.type if (written or placed) else None
    rule = path_rule(note.path, types) if placed else None
    if rule:
        return TypeSuggestion(value=rule[0], confidence=0.9, current=current,
                              reason=f"path rule '{rule[1]}' in types.yaml matches {note.path}")
    votes: dict[str, float] = {}
    for m in near:
        kind = catalog.notes[m.note_id].type if m.note_id in catalog.notes else ""
        if kind:
            votes[kind] = votes.get(kind, 0.0) + max(m.dense, 0.0)
    total = sum(votes.values())
    if not total:
        return None
    best = max(sorted(votes), key=lambda k: votes[k])
    share = votes[best] / total
    n = sum(1 for m in near if m.note_id in catalog.notes and catalog.notes[m.note_id].type == best)
    return TypeSuggestion(value=best, confidence=round(share, 4), current=current,
                          reason=f"{n} of the {len(near)} nearest notes are of type '{best}' "
                                 f"({share:.0%} of their similarity)")


def suggest_tags(source: AnalysisSource, near: Sequence[NoteMatch], catalog: Catalog,
                 settings: AnalysisNeighbours) -> list[TagSuggestion]:
    have = {t.lower() for t in source.note.tags}
    votes: dict[str, float] = {}
    holders: dict[str, list[str]] = {}
    for m in near:
        note = catalog.notes.get(m.note_id)
        for tag in dict.fromkeys(t.lower() for t in (note.tags if note else [])):
            if tag not in have:
                votes[tag] = votes.get(tag, 0.0) + max(m.dense, 0.0)
                holders.setdefault(tag, []).append(note.title)
    total = sum(max(m.dense, 0.0) for m in near)
    if not total:
        return []
    ranked = sorted(votes, key=lambda t: (-votes[t], t))
    out = []
    for tag in ranked:
        share = votes[tag] / total
        if share < settings.min_tag_share or len(out) >= settings.max_tags:
            break
        names = ", ".join(f"'{t}'" for t in holders[tag][:3])
        out.append(TagSuggestion(tag=tag, confidence=round(share, 4),
                                 reason=f"{len(holders[tag])} of the {len(near)} nearest notes have it ({names})"))
    return out
