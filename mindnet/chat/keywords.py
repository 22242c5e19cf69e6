"""The router's fast path: trigger keywords and interview target types found in a message.

Text is compared as a sequence of normalised words: casefolded, umlauts and ß spelled out
(ä->ae, ö->oe, ü->ue, ß->ss, so "fühle" == "fuehle" and "Straße" == "strasse") and split on
everything that is not a letter or digit. A keyword matches when its words occur consecutively,
so "code" never matches inside "Barcode" and punctuation around or inside words is ignored.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mindnet.errors import ConfigError
from mindnet.settings import InterviewSchema, Strategy

logger = logging.getLogger(__name__)

_SPELLED_OUT = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
_WORD = re.compile(r"[^\W_]+")  # runs of unicode letters/digits


def normalize_words(text: str) -> tuple[str, ...]:
    """The words of `text`, casefolded with umlauts and ß spelled out."""
    # NFC first so a decomposed "u + combining diaeresis" is folded like "ü"
    folded = unicodedata.normalize("NFC", text).casefold().translate(_SPELLED_OUT)
    return tuple(_WORD.findall(folded))


@dataclass(frozen=True)
class KeywordMatch:
    strategy: str
    keyword: str
    reason: str


@dataclass(frozen=True)
class _Phrase:
    label: str      # strategy or note type
    text: str       # the phrase as configured
    rank: tuple[int, int, int, int]  # sort key: most words, most characters, then config order


class _PhraseIndex:
    """Phrases grouped by word tuple; a message is scanned once per distinct phrase length."""

    def __init__(self, phrases: Iterable[tuple[str, str]]) -> None:
        self._by_words: dict[tuple[str, ...], _Phrase] = {}
        labels: dict[str, int] = {}
        for position, (label, text) in enumerate(phrases):
            words = normalize_words(text)
            if not words:  # callers reject or skip these; nothing could ever match
                continue
            label_index = labels.setdefault(label, len(labels))
            rank = (-len(words), -len(" ".join(words)), label_index, position)
            known = self._by_words.get(words)
            # the same words listed twice (or under two labels): the first listing wins
            if known is None:
                self._by_words[words] = _Phrase(label, text, rank)
            elif known.label != label:
                logger.debug("phrase %r of %s is shadowed by %r of %s", text, label, known.text, known.label)
        self._lengths = sorted({len(w) for w in self._by_words}, reverse=True)

    def best(self, message: str) -> _Phrase | None:
        words = normalize_words(message)
        found: list[_Phrase] = []
        for n in self._lengths:
            for i in range(len(words) - n + 1):
                hit = self._by_words.get(words[i:i + n])
                if hit is not None:
                    found.append(hit)
        return min(found, key=lambda p: p.rank) if found else None


class KeywordMatcher:
    """Matches messages against the trigger keywords of a strategy set; build once, match often."""

    def __init__(self, strategies: Mapping[str, Strategy]) -> None:
        pairs: list[tuple[str, str]] = []
        for name, strategy in strategies.items():
            for i, keyword in enumerate(strategy.trigger_keywords):
                if not normalize_words(keyword):
                    raise ConfigError(
                        f"decision_engine.yaml: strategies.{name}.trigger_keywords[{i}]: keyword {keyword!r} "
                        "has no letters or digits and can never match; remove it or write a word")
                pairs.append((name, keyword))
        self._index = _PhraseIndex(pairs)

    def match(self, message: str) -> KeywordMatch | None:
        """The best keyword in `message` (most words, then longest, then first strategy), or None."""
        hit = self._index.best(message)
        if hit is None:
            return None
        return KeywordMatch(strategy=hit.label, keyword=hit.text, reason=f"keyword '{hit.text}' matched")


def match_keywords(message: str, strategies: Mapping[str, Strategy]) -> KeywordMatch | None:
    """One-off form of `KeywordMatcher(strategies).match(message)`; keep a matcher to match often."""
    return KeywordMatcher(strategies).match(message)


def detect_target_type(message: str, schemas: Mapping[str, InterviewSchema],
                       types_aliases: Mapping[str, list[str]] | None = None) -> str | None:
    """The note type a message names ("neues Projekt" -> project), by type name and aliases.

    Only types with an interview schema are candidates; `types_aliases` adds names from types.yaml.
    The longest name wins; ties go to the type listed first in `schemas`.
    """
    pairs: list[tuple[str, str]] = []
    for type_name, schema in schemas.items():
        names = [type_name, *schema.aliases, *((types_aliases or {}).get(type_name, []))]
        pairs.extend((type_name, n) for n in names if normalize_words(n))
    if not pairs:
        return None
    hit = _PhraseIndex(pairs).best(message)
    return hit.label if hit else None
