"""Unlinked mentions: a chunk names another note's name (its file name, frontmatter title, first heading or
an alias) as a whole word without linking it. A name the note shares with others makes no mention edge: a note
saying its own name ("Meeting" in a note named Meeting) does not mention the other notes of that name.

One Aho-Corasick automaton over all titles and aliases scans each chunk once, so the cost grows with the
text, not with the number of notes (a 10,000-note vault needs no title-by-title regex loop).

A name only means something when it is specific (types.yaml `mentions`):
- shorter than `min_title_length` characters: never a mention;
- short (fewer than `short_title_chars` characters AND fewer than `short_title_words` words: a handle like
  "jo", a word like "Tags"): its edges get `short_damping` x the confidence (0: none);
- common (named in more than `max_note_share` of the vault's notes, or in more than `common_max_notes`, and
  always in more than `common_min_notes`): its edges get `common_damping` x the confidence (0, the default:
  none). The share is counted over the notes given to `count_notes` (the import gives all notes; without it
  no name counts as common). The ceiling keeps the limit from growing with the vault: with the share alone,
  a name named in 900 of 30,000 notes still made edges, and the mention edges per note grew with N.
A note gets at most `max_per_note` mention edges, the most specific names first.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable

import ahocorasick

from mindnet.settings import MentionSettings
from mindnet.vault.links import mask_code, strip_links
from mindnet.vault.note import Note


def common_limit(settings: MentionSettings, notes: int) -> float:
    """Notes a name may be named in, in a vault of `notes` notes, before it counts as common:
    max(common_min_notes, min(max_note_share x notes, common_max_notes)); inf for no notes counted."""
    if not notes:
        return float("inf")
    share = settings.max_note_share * notes
    if settings.common_max_notes is not None:
        share = min(share, float(settings.common_max_notes))
    return max(float(settings.common_min_notes), share)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def mention_names(note) -> list[str]:  # type: ignore[no-untyped-def]
    """The names a note is mentioned by: its name (file name), its extra names and its aliases."""
    return [note.title, *(getattr(note, "names", None) or []), *note.aliases]


class MentionIndex:
    def __init__(self, notes: Iterable[Note], settings: MentionSettings) -> None:
        start = time.perf_counter()
        self.settings = settings
        self._automaton = ahocorasick.Automaton()
        names: dict[str, set[str]] = {}
        notes_list = list(notes)
        for note in notes_list:
            for name in mention_names(note):
                key = name.strip().casefold()
                if len(key) >= settings.min_title_length:
                    names.setdefault(key, set()).add(note.note_id)
        for key, ids in names.items():
            self._automaton.add_word(key, (key, tuple(sorted(ids))))
        self.size = len(names)
        self._owners = names
        if names:
            self._automaton.make_automaton()
        self.note_freq: Counter[str] = Counter()   # name -> notes (other than its own) that name it
        self._body_spans: dict[str, tuple[str, list]] = {}   # note id -> (its text, body_spans of it)
        self.notes_counted = 0
        self.seconds = time.perf_counter() - start   # building plus every find(): the cost of mentions
        if all(hasattr(n, "body") for n in notes_list):
            self.count_notes(notes_list)

    def count_notes(self, notes: Iterable[Note]) -> None:
        """Count, per name, the notes whose text names it (one scan of every note's body)."""
        start = time.perf_counter()
        self.note_freq.clear()
        self.notes_counted = 0
        self._body_spans.clear()
        for note in notes:
            self.notes_counted += 1
            if not self.size:
                continue
            spans = self.body_spans(note)
            named = {key for _, _, key, ids in spans if note.note_id not in ids}
            self.note_freq.update(named)
        self.seconds += time.perf_counter() - start

    def body_spans(self, note: Note) -> list[tuple[int, int, str, tuple[str, ...]]]:
        """`spans` of a note's whole text (links stripped, code masked). Kept per note from `count_notes`:
        planning asks again for the names each note names and contains, and the scan is the costly part."""
        held = self._body_spans.get(note.note_id)
        if held is not None and (held[0] is note.body or held[0] == note.body):
            return held[1]
        spans = self.spans(strip_links(mask_code(note.body)).casefold())
        self._body_spans[note.note_id] = (note.body, spans)
        return spans

    def common_limit(self) -> float:
        """Notes a name may be named in before it counts as common (inf until notes were counted)."""
        return common_limit(self.settings, self.notes_counted)

    def is_short(self, key: str) -> bool:
        s = self.settings
        return len(key) < s.short_title_chars and len(key.split()) < s.short_title_words

    def is_common(self, key: str) -> bool:
        return self.note_freq.get(key, 0) > self.common_limit()

    def weight(self, key: str) -> float:
        """The factor on a mention's confidence for the name `key` (case-folded): 1 for a specific name,
        damped for a short or common one, 0 for none."""
        w = 1.0
        if self.is_short(key):
            w *= self.settings.short_damping
        if self.is_common(key):
            w *= self.settings.common_damping
        return w

    def rank(self, key: str) -> tuple[float, int, int, str]:
        """Sort key: the most specific names first (heavier, rarer, longer)."""
        return (-self.weight(key), self.note_freq.get(key, 0), -len(key), key)

    def common_names(self, limit: int = 10) -> list[tuple[str, int]]:
        """The names that count as common, with the notes naming them, most frequent first."""
        bound = self.common_limit()
        return [(k, n) for k, n in self.note_freq.most_common() if n > bound][:limit]

    def find(self, text: str, *, exclude: set[str] = frozenset(), own: str | None = None
             ) -> list[tuple[str, str]]:
        """(note_id, surface) for each note mentioned in `text`, longest match first, at most max_per_chunk.
        `own`: the note the text belongs to; a name it shares with other notes mentions none of them."""
        if not self.size:
            return []
        start = time.perf_counter()
        try:
            return self._find(text, exclude, own)
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
        # a span overlaps a taken one exactly when it covers a position a taken one covers: one mark per
        # position keeps this linear in the text (comparing with every taken span grew with the matches per
        # chunk, and those grow with the number of names in the vault)
        covered = bytearray(len(hay))
        taken: list[tuple[int, int, str, tuple[str, ...]]] = []
        for span in spans:
            start, end = span[0], span[1] + 1
            if covered.find(1, start, end) >= 0:
                continue  # "PageRank" inside an already matched "Personalized PageRank"
            covered[start:end] = b"\x01" * (end - start)
            taken.append(span)
        return taken

    def _find(self, text: str, exclude: set[str], own: str | None) -> list[tuple[str, str]]:
        found: dict[str, str] = {}
        for _, _, key, ids in self.spans(strip_links(mask_code(text)).casefold()):
            if own is not None and own in ids:
                continue     # its own name, shared with other notes: not a mention of them
            for note_id in ids:
                if note_id not in exclude and note_id not in found:
                    found[note_id] = key
            if len(found) >= self.settings.max_per_chunk:
                break
        return list(found.items())[: self.settings.max_per_chunk]
