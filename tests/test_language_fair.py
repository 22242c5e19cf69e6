"""Hybrid fusion across languages (retriever.yaml hybrid.language_fair): BM25 cannot match a German question's
words to an English note, so a note in the other language counts its lexical share at its dense share instead of
losing the whole lexical share to the best German keyword match. Worked numbers, alpha 0.5."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, at_cos, config, make_retriever, note_order

from mindnet.indexing.sparse import text_language
from mindnet.retrieval.query import ExpandRequest, QueryRequest

GERMAN_Q = "Warum ist die Suche so langsam"
KEYWORDS_Q = "Suche langsam"          # no stopwords: language undecided

NOTES = [
    NoteSpec("answer-en", [at_cos(0.9)], texts=["Latency comes from the cold model load."], lang="en"),
    NoteSpec("keywords-de", [at_cos(0.6)], texts=["Die Suche war gestern langsam, sagt das Protokoll."], lang="de"),
    NoteSpec("far-de", [at_cos(0.3)], texts=["Ein Rezept für Linsensuppe."], lang="de"),
]


def _search(notes, query: str, **changes):
    queries = {GERMAN_Q: at_cos(1.0), KEYWORDS_Q: at_cos(1.0)}
    r = make_retriever(notes, queries=queries, cfg=config(**changes))
    result = r.search(QueryRequest(query=query, mode="hybrid", expand=ExpandRequest(depth=0)))
    return note_order(result.nodes), {n.node.metadata["note_id"]: n.node.metadata["score_breakdown"]
                                      for n in result.nodes}


def test_the_question_and_the_notes_have_a_language() -> None:
    assert (text_language(GERMAN_Q), text_language(KEYWORDS_Q)) == ("de", None)
    assert text_language(NOTES[0].texts[0]) == "en"


def test_a_note_in_the_other_language_counts_its_lexical_share_at_its_dense_share() -> None:
    ranking, b = _search(NOTES, GERMAN_Q)
    # dense min-max over the candidates: answer-en 1.0, keywords-de 0.5, far-de 0.0; BM25: keywords-de 1.0
    assert b["keywords-de"]["lexical"] == 1.0 and b["answer-en"]["lexical"] == 0.0
    assert b["keywords-de"]["semantic"] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)    # 0.75, unchanged
    assert b["answer-en"]["semantic"] == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)      # 1.0 instead of 0.5
    assert b["answer-en"]["other_language"] and not b["keywords-de"]["other_language"]
    assert b["far-de"]["semantic"] == pytest.approx(0.0)      # the question's language: judged by BM25 as before
    assert ranking[:2] == ["answer-en", "keywords-de"]


def test_switched_off_the_best_keyword_match_wins_as_before() -> None:
    ranking, b = _search(NOTES, GERMAN_Q, **{"hybrid.language_fair": False})
    assert b["answer-en"]["semantic"] == pytest.approx(0.5) and not b["answer-en"]["other_language"]
    assert ranking[:2] == ["keywords-de", "answer-en"]


def test_an_undecided_question_or_a_vault_of_one_language_is_left_alone() -> None:
    ranking, b = _search(NOTES, KEYWORDS_Q)          # no stopwords: its language is unknown
    assert b["answer-en"]["semantic"] == pytest.approx(0.5)
    english_only = [NoteSpec(n.note_id, n.vectors, texts=n.texts, lang="en") for n in NOTES]
    ranking, b = _search(english_only, GERMAN_Q)      # no note in the question's language: BM25 judges all alike
    assert b["answer-en"]["semantic"] == pytest.approx(0.5)
    assert not any(x["other_language"] for x in b.values())


def test_the_explanation_says_why() -> None:
    queries = {GERMAN_Q: at_cos(1.0)}
    r = make_retriever(NOTES, queries=queries, cfg=config())
    top = r.search(QueryRequest(query=GERMAN_Q, mode="hybrid", expand=ExpandRequest(depth=0))).nodes[0]
    assert "in another language than the question" in top.node.metadata["explanation"]["reasons"][0]
