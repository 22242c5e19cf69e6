"""A local BM25-style sparse encoder for German and English notes (no model download).

Qdrant stores the vectors with ``Modifier.IDF`` and computes IDF itself, so a document value is only the BM25
term-frequency part and a query value is 1.0 per unique term: the dot product IDF x doc-value is then BM25.

Tokenising (``tokenize``):

1. Markdown noise is removed: URLs, HTML tags, link targets ``](...)``; ``[[``, ``]]``, ``|``, ``#``, ``*``
   and backticks vanish because only letter/digit runs are kept.
2. Casefold (``Straße`` -> ``strasse``), then word tokens = runs of letters/digits; ``_`` and ``-`` split.
   A hyphenated compound also yields its joined form (``E-Mail`` -> ``mail``, ``email``), so it matches the
   spelling without a hyphen. Single letters are dropped, single digits kept.
3. Language per text: count hits of words that are stopwords in only one of the two languages (minus weak
   evidence such as ``man``, ``hat``, ``not``; single letters like ``a``/``i`` count). More German hits ->
   German stemmer, more English hits -> English stemmer. A tie (typically a short keyword query with no
   stopwords at all) is undecided and each word yields both stems (deduplicated). Measured on examples: with
   "ties -> English", the query ``Entscheidungen Projekt`` gave ``entscheidungen`` while a German note gave
   ``entscheid`` (no match); with both stems it matches German and English notes. Stemming every text with
   both was rejected: it doubles the vector and creates false matches (English ``rates`` -> German stem
   ``rat``, as in ``Rat``).
4. Stopwords of both languages are dropped, except German stopwords that are English content words (``die``,
   ``war``, ``hat``, ...) in English texts, and vice versa (``not``, ``after``) in German texts.

Token -> index: the first 4 bytes of blake2b of the stem, masked to 31 bits, so indices are identical across
processes and fit signed 32-bit consumers. Counts of stems colliding on one index are merged.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import snowballstemmer

from mindnet.errors import ConfigError, QueryError

logger = logging.getLogger(__name__)

Language = Literal["de", "en"]
SparseBatch = tuple[list[list[int]], list[list[float]]]

# Compact lists after the Snowball/NLTK lists, casefolded (so "daß" is written "dass"). English contraction
# stems ("don", "isn") are listed because "don't" splits at the apostrophe; "won" is not (it is a verb too).
STOPWORDS_DE: frozenset[str] = frozenset("""
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anderm
andern anderr anders auch auf aus bei bin bis bist da damit dann das dass dasselbe dazu dein deine deinem
deinen deiner deines dem demselben den denn denselben der derer derselbe derselben des desselben dessen
dich die dies diese dieselbe dieselben diesem diesen dieser dieses dir doch dort du durch ein eine einem
einen einer eines einig einige einigem einigen einiger einiges einmal er es etwas euch euer eure eurem
euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr
ihre ihrem ihren ihrer ihres im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener
jenes jetzt kann kein keine keinem keinen keiner keines können könnte machen man manche manchem manchen
mancher manches mein meine meinem meinen meiner meines mich mir mit muss musste nach nicht nichts noch
nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie sind so solche solchem
solchen solcher solches soll sollte sondern sonst über um und uns unser unsere unserem unseren unserer
unseres unter viel vom von vor während war waren warst was weg weil weiter welche welchem welchen welcher
welches wenn werde werden wie wieder will wir wird wirst wo wollen wollte worden wurde wurden würde
würden zu zum zur zwar zwischen
""".split())

STOPWORDS_EN: frozenset[str] = frozenset("""
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each few for
from further had hadn has hasn have haven having he her here hers herself him himself his how i if in
into is isn it its itself just ll me more most mustn my myself no nor not now of off on once only or
other our ours ourselves out over own re same shan she should shouldn so some such than that the their
theirs them themselves then there these they this those through to too under until up ve very was wasn we
were weren what when where which while who whom why will with would wouldn you your yours yourself
yourselves
""".split())

# Stopwords of one language that are content words of the other: kept when the text is in that other language.
_CONTENT_EN: frozenset[str] = frozenset({"die", "war", "hat", "man", "bin"})
_CONTENT_DE: frozenset[str] = frozenset({"not", "after", "most"})

# Language evidence: stopwords of one language only, minus weak ones that are common words of the other
# ("Being a man" is English); "die" and "war" still count, they are far more often German.
_WEAK = frozenset({"man", "hat", "bin", "not", "after", "most"})
_ONLY_DE = STOPWORDS_DE - STOPWORDS_EN - _WEAK
_ONLY_EN = STOPWORDS_EN - STOPWORDS_DE - _WEAK
_ALL_STOP = STOPWORDS_DE | STOPWORDS_EN
_DROP: dict[Language | None, frozenset[str]] = {
    "de": (STOPWORDS_DE | STOPWORDS_EN) - (_CONTENT_DE - STOPWORDS_DE),
    "en": (STOPWORDS_EN | STOPWORDS_DE) - (_CONTENT_EN - STOPWORDS_EN),
    None: _ALL_STOP - ((_CONTENT_DE - STOPWORDS_DE) | (_CONTENT_EN - STOPWORDS_EN)),
}

_URL = re.compile(r"(?:https?|ftp)://\S+|www\.\S+", re.IGNORECASE)
# A tag or link target never spans another "<" or "(": an unclosed `<a<a<a...` or `](](](...` then costs one
# scan per opener up to the next one (linear), not one scan to the end of the line per opener (quadratic).
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>\n]*>")
_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")  # markdown [text](target): keep the text, drop the target
# A word: letter/digit runs joined by single hyphens ("e-mail", "covid-19"); "_" is not part of a word here.
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")

_stemmers = threading.local()  # snowball stemmer objects keep state, so one per thread


def _stemmer(language: Language) -> snowballstemmer.Stemmer:
    cache = getattr(_stemmers, "by_language", None)
    if cache is None:
        cache = _stemmers.by_language = {}
    if language not in cache:
        cache[language] = snowballstemmer.stemmer("german" if language == "de" else "english")
    return cache[language]


@lru_cache(maxsize=200_000)
def _stem(word: str, language: Language) -> str:
    return _stemmer(language).stemWord(word)


def _clean(text: str) -> str:
    text = _URL.sub(" ", text)
    text = _LINK_TARGET.sub("] ", text)
    return _HTML_TAG.sub(" ", text)


def _words(text: str) -> list[str]:
    """Casefolded word tokens (single letters included), hyphen compounds: parts, then the joined form."""
    words: list[str] = []
    for token in _WORD.findall(text.casefold()):
        if "-" in token:          # _WORD joins parts by single hyphens only, so split("-") gives the parts
            parts = token.split("-")
            words.extend(parts)
            words.append("".join(parts))
        else:
            words.append(token)
    return words


def detect_language(words: Sequence[str]) -> Language | None:
    """German or English by stopword hits (words that are stopwords in one language only); None on a tie."""
    de = sum(1 for w in words if w in _ONLY_DE)
    en = sum(1 for w in words if w in _ONLY_EN)
    if de == en:
        return None
    return "de" if de > en else "en"


PIECE_CHARS = 32_768    # text cleaned and split in pieces of about this size, cut at line ends


def _clean_words(text: str) -> list[str]:
    """`_words(_clean(text))`, a piece of lines at a time: none of the patterns crosses a line end, so the words
    are the same, and no single regex call over a 2 MB note holds the interpreter lock (and a server's event
    loop) for a tenth of a second."""
    if len(text) <= PIECE_CHARS:
        return _words(_clean(text))
    words: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + PIECE_CHARS)
        end = len(text) if end < 0 else end + 1
        words.extend(_words(_clean(text[start:end])))
        start = end
    return words


def text_language(text: str) -> Language | None:
    """The language `tokenize` stems `text` in (None: undecided, both stems)."""
    return detect_language(_clean_words(text))


def tokenize(text: str) -> list[str]:
    """Stemmed content terms of `text` in order (see the module docstring for the rules)."""
    words = _clean_words(text)
    language = detect_language(words)
    drop = _DROP[language]
    terms: list[str] = []
    for word in words:
        if word in drop or (len(word) == 1 and not word.isdigit()):
            continue
        if language is not None:
            terms.append(_stem(word, language))
            continue
        de, en = _stem(word, "de"), _stem(word, "en")
        terms.append(de)
        if en != de:
            terms.append(en)
    return terms


@lru_cache(maxsize=400_000)   # a vault repeats its terms: 667,000 lookups for 3,000 notes, mostly cached
def term_index(term: str) -> int:
    """Stable 31-bit index of a term: blake2b, the same in every process (unlike `hash`)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF


def _sorted_vector(weights: dict[int, float]) -> tuple[list[int], list[float]]:
    indices = sorted(weights)
    return indices, [weights[i] for i in indices]


@dataclass(frozen=True)
class SparseEncoder:
    """BM25 encoder; `avgdl` stands in for the corpus mean length because each text is encoded alone."""

    k1: float = 1.2
    b: float = 0.75
    avgdl: float = 150.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.k1) and self.k1 >= 0):
            _bad_parameter("k1", self.k1, "a number >= 0, usually 1.2")
        if not (0.0 <= self.b <= 1.0):
            _bad_parameter("b", self.b, "a number in [0, 1], usually 0.75")
        if not (math.isfinite(self.avgdl) and self.avgdl > 0):
            _bad_parameter("avgdl", self.avgdl, "the mean chunk length in tokens, > 0, e.g. 150")

    def document_weights(self, terms: Sequence[str]) -> dict[int, float]:
        """BM25 tf saturation with length normalisation, per index."""
        counts: Counter[int] = Counter(term_index(t) for t in terms)
        norm = self.k1 * (1.0 - self.b + self.b * len(terms) / self.avgdl)
        return {i: tf * (self.k1 + 1.0) / (tf + norm) for i, tf in counts.items()}

    def encode_documents(self, texts: Iterable[str]) -> SparseBatch:
        """(indices, values) per text; indices sorted and unique."""
        batch_indices: list[list[int]] = []
        batch_values: list[list[float]] = []
        for text in _checked(texts, "texts"):
            indices, values = _sorted_vector(self.document_weights(tokenize(text)))
            batch_indices.append(indices)
            batch_values.append(values)
        return batch_indices, batch_values

    def encode_queries(self, texts: Iterable[str]) -> SparseBatch:
        """(indices, values) per query: 1.0 per unique term, so Qdrant's IDF x doc value sums to BM25."""
        batch_indices: list[list[int]] = []
        batch_values: list[list[float]] = []
        for text in _checked(texts, "queries"):
            indices, values = _sorted_vector({term_index(t): 1.0 for t in tokenize(text)})
            batch_indices.append(indices)
            batch_values.append(values)
        return batch_indices, batch_values


def _bad_parameter(name: str, value: float, expected: str) -> None:
    raise ConfigError(f"SparseEncoder.{name}: {value!r} is invalid (fix: use {expected})")


def _checked(texts: Iterable[str], field: str) -> list[str]:
    if isinstance(texts, str):  # a bare string would be encoded character by character
        raise QueryError("expected a list of strings, got one string (fix: wrap it in a list)", field=field)
    items = list(texts)
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise QueryError(f"item {position} is {type(text).__name__}, not str", field=field)
    return items


DEFAULT_ENCODER = SparseEncoder()


def sparse_doc_fn(texts: list[str]) -> SparseBatch:
    """`sparse_doc_fn` for llama-index's QdrantVectorStore, with the default encoder."""
    return DEFAULT_ENCODER.encode_documents(texts)


def sparse_query_fn(texts: list[str]) -> SparseBatch:
    """`sparse_query_fn` for llama-index's QdrantVectorStore, with the default encoder."""
    return DEFAULT_ENCODER.encode_queries(texts)
