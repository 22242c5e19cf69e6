"""Unlinked mentions: a chunk names another note's title or alias as a whole word without linking it.

One Aho-Corasick automaton over all titles and aliases scans each chunk once, so the cost grows with the
text, not with the number of notes (a 10,000-note vault needs no title-by-title regex loop).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import ahocorasick

from mindnet.settings import MentionSettings
from mindnet.vault.links import mask_code, strip_links
from mindnet.vault.note import Note


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class MentionIndex:
    def __init__(self, notes: Iterable[Note], settings: MentionSettings) -> None:
        start = time.perf_counter()
        self.settings = settings
        self._automaton = ahocorasick.Automaton()
        names: dict[str, set[str]] = {}
        for note in notes:
            for name in [note.title, *note.aliases]:
                key = name.strip().casefold()
                if len(key) >= settings.min_title_length:
                    names.setdefault(key, set()).add(note.note_id)
        for key, ids in names.items():
            self._automaton.add_word(key, (key, tuple(sorted(ids))))
        self.size = len(names)
        if names:
            self._automaton.make_automaton()
        self.seconds = time.perf_counter() - start   # building plus every find(): the cost of mentions

    def find(self, text: str, *, exclude: set[str] = frozenset()) -> list[tuple[str, str]]:
        """(note_id, surface) for each note mentioned in `text`, longest match first, at most max_per_chunk."""
        if not self.size:
            return []
        start = time.perf_counter()
        try:
            return self._find(text, exclude)
        finally:
            self.seconds += time.perf_counter() - start

    def spans(self, hay: str) -> list[tuple[int, int, str, tuple[str, ...]]]:
        """Whole-word matches in an already masked, case-folded text as (start, end inclusive, name, note ids),
        longest first; a match inside a longer one is dropped."""
        spans: list[tuple[int, int, str, tuple[str, ...]]] = []
        if not self.size:
            return spans
        for end, (key, ids) in self._automaton.iter(hay):
            start = end - len(key) + 1
            if (start > 0 and _is_word_char(hay[start - 1])) or (end + 1 < len(hay) and _is_word_char(hay[end + 1])):
                continue
            spans.append((start, end, key, ids))
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        taken: list[tuple[int, int, str, tuple[str, ...]]] = []
        for span in spans:
            if any(span[0] <= e and s <= span[1] for s, e, _, _ in taken):
                continue  # "PageRank" inside an already matched "Personalized PageRank"
            taken.append(span)
        return taken

    def _find(self, text: str, exclude: set[str]) -> list[tuple[str, str]]:
        found: dict[str, str] = {}
        for _, _, key, ids in self.spans(strip_links(mask_code(text)).casefold()):
            for note_id in ids:
                if note_id not in exclude and note_id not in found:
                    found[note_id] = key
            if len(found) >= self.settings.max_per_chunk:
                break
        return list(found.items())[: self.settings.max_per_chunk]
