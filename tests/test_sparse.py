"""Tests of the local BM25 sparse encoder (mindnet.indexing.sparse)."""

from __future__ import annotations

import pytest

from mindnet.errors import ConfigError, QueryError
from mindnet.indexing.sparse import (
    SparseEncoder,
    detect_language,
    sparse_doc_fn,
    sparse_query_fn,
    term_index,
    tokenize,
)
from mindnet.store.collections import point_id
from mindnet.store.engine import Point, Sparse
from mindnet.store.factory import TemporaryEdgeStore

# --------------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize(("text", "expected"), [
    ("Die Entscheidungen wurden getroffen.", ["entscheid", "getroff"]),
    ("Die Entscheidung wurde getroffen.", ["entscheid", "getroff"]),
    ("Die Häuser und das Haus", ["haus", "haus"]),
    ("She was running.", ["run"]),
    ("He runs every day.", ["run", "everi", "day"]),
])
def test_stemming_collapses_inflections(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("der die das und ist nicht", []),
    ("the and of is not was", []),
    ("Das ist der Plan", ["plan"]),
    ("This is the plan", ["plan"]),
])
def test_stopwords_of_both_languages_are_dropped(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Who died in the war?", "en"),       # "die"/"war" are German stopwords but English words
    ("Wer ist im Krieg gestorben?", "de"),
    ("Entscheidungen Projekt", None),     # no stopwords: undecided
])
def test_detect_language(text: str, expected: str | None) -> None:
    assert detect_language(text.casefold().split()) == expected


def test_english_text_keeps_words_that_are_german_stopwords() -> None:
    assert tokenize("Who died in the war?") == ["die", "war"]


def test_undecided_text_yields_both_stems() -> None:
    # German stem "entscheid" matches German notes, English stem (unchanged word) matches English ones
    assert tokenize("Entscheidungen Projekt") == ["entscheid", "entscheidungen", "projekt"]


def test_markdown_and_url_noise_is_stripped() -> None:
    text = ("Siehe [[Projekt Alpha|Alpha]] und #tag **fett** `code` https://example.com/x?y=1 "
            "[Link](notes/a.md)")
    assert tokenize(text) == ["sieh", "projekt", "alpha", "alpha", "tag", "fett", "cod", "link"]


def test_hyphen_compound_yields_parts_and_joined_form() -> None:
    assert tokenize("Die E-Mail an covid-19") == ["mail", "email", "covid", "19", "covid19"]


def test_casefold_maps_sharp_s() -> None:
    assert tokenize("Die Straße") == tokenize("die STRASSE") == ["strass"]


@pytest.mark.parametrize("text", ["", "   ", "der die das", "[[ ]] ** ` https://example.com"])
def test_texts_without_content_give_no_terms(text: str) -> None:
    assert tokenize(text) == []


# --------------------------------------------------------------------------- indices


def test_term_index_is_stable_across_processes() -> None:
    # computed once with blake2b(digest_size=4) & 0x7FFFFFFF; Python's hash() would differ per process
    assert term_index("entscheid") == 792218557


def test_term_index_fits_31_bits() -> None:
    assert all(0 <= term_index(t) < 2**31 for t in ["a", "entscheid", "run", "ü" * 50])


def test_indices_are_sorted_and_unique() -> None:
    (indices,), _ = SparseEncoder().encode_documents(["alpha beta alpha gamma beta alpha"])
    assert indices == sorted({term_index("alpha"), term_index("beta"), term_index("gamma")})


# --------------------------------------------------------------------------- BM25 values


@pytest.mark.parametrize(("tf", "expected"), [
    (1, 1.0),                # 1*2.2/(1+1.2)
    (2, 1.375),              # 2*2.2/(2+1.2) = 4.4/3.2
    (4, 8.8 / 5.2),          # 1.6923...
    (8, 17.6 / 9.2),         # 1.9130..., approaching k1+1 = 2.2
])
def test_term_frequency_saturates(tf: int, expected: float) -> None:
    encoder = SparseEncoder(b=0.0)  # no length normalisation: value = tf*(k1+1)/(tf+k1)
    _, (values,) = encoder.encode_documents([" ".join(["alpha"] * tf)])
    assert values == [pytest.approx(expected, rel=1e-12)]


@pytest.mark.parametrize(("text", "expected"), [
    ("alpha beta", 2.2 / 1.75),                                    # dl=2: k1*(0.25+0.75*2/4)=0.75
    ("alpha beta gamma delta", 1.0),                               # dl=avgdl: 2.2/2.2
    ("alpha beta gamma delta epsilon zeta eta theta", 2.2 / 3.1),  # dl=8: k1*(0.25+0.75*2)=2.1
])
def test_length_normalisation(text: str, expected: float) -> None:
    _, (values,) = SparseEncoder(avgdl=4).encode_documents([text])
    assert values[0] == pytest.approx(expected, rel=1e-12)


def test_query_values_are_one_per_unique_term() -> None:
    (indices,), (values,) = SparseEncoder().encode_queries(["alpha alpha beta"])
    assert (indices, values) == (sorted([term_index("alpha"), term_index("beta")]), [1.0, 1.0])


@pytest.mark.parametrize("encode", [sparse_doc_fn, sparse_query_fn])
def test_empty_text_gives_empty_vector(encode) -> None:
    assert encode(["", "the"]) == ([[], []], [[], []])


@pytest.mark.parametrize("encode", [sparse_doc_fn, sparse_query_fn])
def test_empty_batch_gives_empty_lists(encode) -> None:
    assert encode([]) == ([], [])


def test_a_bare_string_is_rejected() -> None:
    with pytest.raises(QueryError, match="wrap it in a list"):
        sparse_doc_fn("alpha beta")  # type: ignore[arg-type]


@pytest.mark.parametrize(("field", "kwargs"), [
    ("k1", {"k1": -1.0}), ("b", {"b": 1.5}), ("avgdl", {"avgdl": 0.0}),
])
def test_invalid_parameters_raise_config_error(field: str, kwargs: dict) -> None:
    with pytest.raises(ConfigError, match=f"SparseEncoder.{field}"):
        SparseEncoder(**kwargs)


DOCS = [
    "Die Entscheidung über das Budget wurde im Projekt Alpha getroffen.",
    "We decided to run the database migration on Friday.",
    "Notizen zum Meeting: Budget und Zeitplan für Projekt Beta.",
    "The garden needs water and the roses need pruning.",
    "Rezept: Kartoffelsuppe mit Lauch und Karotten.",
]


@pytest.fixture(scope="module")
def index():
    """The documents as chunks of a real store (Qdrant Edge, IDF modifier): BM25 as a search computes it."""
    store = TemporaryEdgeStore("t")
    store.create(2)
    indices, values = sparse_doc_fn(DOCS)
    store.upsert("chunks", [Point(point_id(str(i)), {"doc": i}, sparse=Sparse(idx, val))
                            for i, (idx, val) in enumerate(zip(indices, values, strict=True))])
    yield store
    store.close()


@pytest.mark.parametrize(("query", "expected_first"), [
    ("Entscheidungen Budget Alpha", 0),   # keyword query without stopwords: both stems, "budget" in 0 and 2
    ("when did we run the migration", 1),
    ("Welche Notizen gibt es zum Zeitplan?", 2),
    ("pruning roses", 3),
])
def test_sparse_query_ranks_the_expected_note_first(index, query: str, expected_first: int) -> None:
    (indices,), (values,) = sparse_query_fn([query])
    hits = index.search_sparse(Sparse(indices, values), 5, payload=["doc"])
    assert hits[0].payload["doc"] == expected_first
