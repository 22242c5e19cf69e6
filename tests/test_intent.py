"""Answer-type intent: the note type a which-question asks for, and its worked effect on W_type."""

from __future__ import annotations

import pytest
from retrieval_fixtures import NoteSpec, at_cos, config, link, make_retriever, note_order

from mindnet.retrieval.intent import asked_types, type_vocabulary
from mindnet.retrieval.query import ExpandRequest, QueryRequest
from mindnet.retrieval.scoring import capped, compute_score
from mindnet.settings import IntentSettings, ScoringWeights, shipped_types

WORDS = type_vocabulary(shipped_types())


@pytest.mark.parametrize(("question", "types"), [
    ("Which book is the principle of writing things down taken from?", ["source"]),
    ("Which of my values is behind running language models on my own laptop?", ["value"]),
    ("Auf welchem Konzept beruhen die Phasen meines Trainingsplans?", ["concept"]),
    ("Welche Aufgaben sind noch offen?", ["task"]),
    ("Welche Entscheidungen und welche Projekte hängen an Qdrant?", ["decision", "project"]),
    ("Which decision did I make about the database?", ["decision"]),
])
def test_a_which_question_asks_for_the_type_its_noun_names(question: str, types: list[str]) -> None:
    assert asked_types(question, WORDS) == types


@pytest.mark.parametrize("question", [
    "Was ist für Juli geplant, nach der Entscheidung gegen den Wettkampf?",   # about a decision, asks for a plan
    "Why should every decision get a short note?",                            # no which-question
    "Which port does the local model server listen on?",                      # "port" names no type
    "Which of the hub notes links most?",                                     # the index type is left out
    "Which of my many old notes about values ...",                            # more than 3 fillers: no type
    "",
])
def test_other_questions_ask_for_no_type(question: str) -> None:
    assert asked_types(question, WORDS) == []


def test_the_vocabulary_holds_names_and_aliases_but_not_the_index_type() -> None:
    assert (WORDS["concept"], WORDS["konzept"], WORDS["book"], WORDS["wert"]) == ("concept", "concept", "source",
                                                                                  "value")
    assert "index" not in WORDS.values() and "hub" not in WORDS
    assert asked_types("which values", {}) == []


W = ScoringWeights(semantic_weight=1.0, edge_weight=0.3, centrality_weight=0.2)


def test_type_intent_multiplies_w_type_and_survives_the_lift_cap() -> None:
    # S_sem 0.8, W_type 1.0, intent 0.5: semantic term 1.0 * 0.8 * 1.0 * 0.5 = 0.4; + 0.3 * 1.0 + 0.2 * 0.5 = 0.8
    b = compute_score(semantic=0.8, retriever_weight=1.0, edge_bonus=1.0, centrality_bonus=0.5, weights=W,
                      type_intent=0.5)
    assert (b.semantic_term, b.total, b.type_intent) == (pytest.approx(0.4), pytest.approx(0.8), 0.5)
    # capped at 0.6: the graph's 0.4 is scaled to 0.2 (graph_scale 0.5), the damped semantic term stays
    cut = capped(b, 0.6, W)
    assert (cut.semantic_term, cut.graph_scale, cut.total, cut.type_intent) == (
        pytest.approx(0.4), pytest.approx(0.5), pytest.approx(0.6), 0.5)


# a project note (p1) matches best; the book it cites (s1) matches less (alpha 0.5, no keyword overlap):
# dense min-max over (0.0, 0.9): project 1.0 -> S_sem 0.5, book 0.8 / 0.9 = 0.8889 -> S_sem 0.4444
NOTES = [NoteSpec("p1", [at_cos(0.9)], type="project"), NoteSpec("s1", [at_cos(0.8)], type="source"),
         NoteSpec("far", [at_cos(0.0)], type="concept")]
ASK = "Which book is the plan based on?"


def search(question: str, depth: int = 0, intent: bool = True) -> list:
    cfg = config().model_copy(update={"intent": IntentSettings(enabled=intent)})
    retriever = make_retriever(NOTES, [link("p1", "s1")], queries={question: at_cos(1.0)}, cfg=cfg,
                               type_words=WORDS)
    return retriever.search(QueryRequest(query=question, mode="hybrid", expand=ExpandRequest(depth=depth))).nodes


def test_a_which_question_puts_the_asked_type_first_and_says_why() -> None:
    nodes = search(ASK)
    assert note_order(nodes)[:2] == ["s1", "p1"]
    book, proj = (n.node.metadata for n in nodes[:2])
    # book 0.4444 x 1.0; project 0.5 x 0.5 = 0.25
    assert book["score_breakdown"]["total"] == pytest.approx(0.4444, abs=1e-4)
    assert proj["score_breakdown"]["total"] == pytest.approx(0.25)
    assert proj["score_breakdown"]["type_intent"] == 0.5
    assert "the question asks for a 'source' note, this is a 'project' note: damped (x0.5)" in \
        proj["explanation"]["reasons"]
    assert "the question asks for a 'source' note: this one is of that type" in book["explanation"]["reasons"]


def test_without_a_which_question_or_with_intent_off_the_order_is_the_plain_one() -> None:
    assert note_order(search("What is the plan based on?"))[:2] == ["p1", "s1"]
    off = search(ASK, intent=False)
    assert note_order(off)[:2] == ["p1", "s1"]
    assert off[0].node.metadata["score_breakdown"]["type_intent"] == 1.0


def test_an_asked_type_no_candidate_has_changes_nothing() -> None:
    nodes = search("Which person wrote the plan?")
    assert note_order(nodes)[:2] == ["p1", "s1"]
    assert {n.node.metadata["score_breakdown"]["type_intent"] for n in nodes} == {1.0}
