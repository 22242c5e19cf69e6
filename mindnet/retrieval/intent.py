"""Answer-type intent: the note type a question asks for, by the words types.yaml gives each type.

"Which book ...", "Which of my values ...", "Auf welchem Konzept ..." ask for a note of one type: the word after
an interrogative determiner (which / welche, welcher, welches, welchem, welchen), past up to three filler words
("of my", "meiner"), names a type (its name or one of its `aliases`, singular or plural). The retriever then
weighs notes of other types by `retriever.yaml intent.other_types_weight` (W_type x that factor), so the note of
the asked type that the best hit links to can come first. Only "which"-questions count: a type word elsewhere
("the decision against the competition") says what the question is about, not what it asks for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mindnet.settings import TypesConfig

DETERMINERS = frozenset({"which", "welche", "welcher", "welches", "welchem", "welchen"})
FILLERS = frozenset({"of", "my", "our", "your", "the", "these", "those", "meiner", "meine", "meinen", "meinem",
                     "unserer", "unsere", "der", "die", "das", "den", "dem", "von"})
MAX_FILLERS = 3
_WORD = re.compile(r"[^\W\d_]+")
_ENDINGS = ("", "s", "es", "e", "en", "n")       # plural endings stripped to find the type word


def type_vocabulary(types: TypesConfig) -> dict[str, str]:
    """Casefolded word -> type, from each type's name and aliases. The index type is left out: its names (hub,
    map, start) are common words, and an index note is never the answer to a which-question."""
    skip = types.index_type()
    words: dict[str, str] = {}
    for name, spec in types.types.items():
        if name == skip:
            continue
        for word in (name, *spec.aliases):
            words.setdefault(word.strip().casefold(), name)
    return words


def _type_of(word: str, vocabulary: Mapping[str, str]) -> str | None:
    for ending in _ENDINGS:
        stem = word[: len(word) - len(ending)] if ending and word.endswith(ending) else word if not ending else None
        if stem and stem in vocabulary:
            return vocabulary[stem]
    return None


def asked_types(text: str, vocabulary: Mapping[str, str]) -> list[str]:
    """The types a question asks for ("Which of my values ...?" -> ["value"]), in order; [] when none."""
    if not vocabulary:
        return []
    words = _WORD.findall(text.casefold())
    found: list[str] = []
    for i, word in enumerate(words):
        if word not in DETERMINERS:
            continue
        j = i + 1
        while j < len(words) and j - i <= MAX_FILLERS and words[j] in FILLERS:
            j += 1
        kind = _type_of(words[j], vocabulary) if j < len(words) else None
        if kind is not None and kind not in found:
            found.append(kind)
    return found
