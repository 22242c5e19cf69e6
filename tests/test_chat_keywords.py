"""Keyword fast path of the router and interview target-type detection."""

from __future__ import annotations

import pytest

from mindnet.chat.keywords import (
    KeywordMatch,
    KeywordMatcher,
    detect_target_type,
    match_keywords,
    normalize_words,
)
from mindnet.errors import ConfigError
from mindnet.settings import InterviewSchema, Strategy


def _strategies(**keywords: list[str]) -> dict[str, Strategy]:
    return {name: Strategy(description=name, trigger_keywords=kws, prompt=name.lower())
            for name, kws in keywords.items()}


STRATEGIES = _strategies(
    FACT=["was ist", "wann", "what is"],
    DECISION=["soll ich", "entscheidung", "vor- und nachteile", "should i"],
    EMPATHY=["ich fühle mich", "traurig"],
    CODING=["code", "python", "bug"],
    INTERVIEW=["neue entscheidung", "capture", "straße"],
)


@pytest.mark.parametrize(("text", "words"), [
    ("Ich FÜHLE mich", ("ich", "fuehle", "mich")),
    ("Straße", ("strasse",)),
    ("Grüße, Öl & Ärger!", ("gruesse", "oel", "aerger")),
    ("u\u0308ber", ("ueber",)),  # decomposed ü
    ("snake_case-word", ("snake", "case", "word")),
    ("  ...  ", ()),
])
def test_normalize_words(text: str, words: tuple[str, ...]) -> None:
    assert normalize_words(text) == words


@pytest.mark.parametrize(("message", "strategy", "keyword"), [
    ("Soll ich kündigen?", "DECISION", "soll ich"),
    ("SOLL ICH?", "DECISION", "soll ich"),
    ("Was ist RAG?", "FACT", "was ist"),
    ("Ich fuehle mich leer", "EMPATHY", "ich fühle mich"),      # spelled-out umlaut in the message
    ("Die Strasse ist gesperrt", "INTERVIEW", "straße"),          # ß in the keyword
    ("Vor- und Nachteile bitte", "DECISION", "vor- und nachteile"),
    ("(python)", "CODING", "python"),
    ("Bug!!!", "CODING", "bug"),
    ("Should I, really?", "DECISION", "should i"),
])
def test_match(message: str, strategy: str, keyword: str) -> None:
    assert KeywordMatcher(STRATEGIES).match(message) == KeywordMatch(
        strategy=strategy, keyword=keyword, reason=f"keyword '{keyword}' matched")


@pytest.mark.parametrize("message", [
    "Scanne den Barcode",      # "code" inside a word
    "Die Wanne ist voll",      # "wann" inside a word
    "Pythonic style",          # "python" as a prefix
    "Entscheidungen",          # plural is another word
    "soll mich ich",           # words not consecutive
    "",
])
def test_no_match_inside_words(message: str) -> None:
    assert KeywordMatcher(STRATEGIES).match(message) is None


@pytest.mark.parametrize(("message", "strategy", "keyword"), [
    # "neue entscheidung" (2 words) beats "entscheidung" (1 word)
    ("Neue Entscheidung anlegen", "INTERVIEW", "neue entscheidung"),
    # "ich fühle mich" (3 words) beats "soll ich" (2 words)
    ("Ich fühle mich unsicher, soll ich gehen?", "EMPATHY", "ich fühle mich"),
    # one word each: "entscheidung" has more characters than "python"
    ("Python Entscheidung", "DECISION", "entscheidung"),
])
def test_longest_keyword_wins(message: str, strategy: str, keyword: str) -> None:
    hit = KeywordMatcher(STRATEGIES).match(message)
    assert hit is not None
    assert (hit.strategy, hit.keyword) == (strategy, keyword)


def test_tie_goes_to_strategy_listed_first() -> None:
    strategies = _strategies(FIRST=["abc"], SECOND=["xyz"])
    assert KeywordMatcher(strategies).match("xyz abc").strategy == "FIRST"


def test_same_keyword_in_two_strategies_goes_to_first() -> None:
    strategies = _strategies(FIRST=["entscheiden"], SECOND=["Entscheiden"])
    assert KeywordMatcher(strategies).match("entscheiden").strategy == "FIRST"


def test_match_keywords_function_equals_matcher() -> None:
    assert match_keywords("soll ich?", STRATEGIES) == KeywordMatcher(STRATEGIES).match("soll ich?")


def test_keyword_without_letters_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"strategies\.FACT\.trigger_keywords\[1\]"):
        KeywordMatcher(_strategies(FACT=["was ist", "?!"]))


def test_no_strategies_never_match() -> None:
    assert KeywordMatcher({}).match("soll ich") is None


SCHEMAS = {
    "project": InterviewSchema(aliases=["projekt"]),
    "decision": InterviewSchema(aliases=["entscheidung"]),
    "experience": InterviewSchema(aliases=["erfahrung"]),
    "source": InterviewSchema(aliases=["quelle"]),
}


@pytest.mark.parametrize(("message", "target"), [
    ("neues Projekt: Garten", "project"),
    ("new decision about hosting", "decision"),
    ("Neue Entscheidung", "decision"),
    ("Ich möchte eine Erfahrung festhalten", "experience"),
    ("Capture this PROJECT", "project"),
    ("Erfasse etwas", None),
    ("Projekte", None),
])
def test_detect_target_type(message: str, target: str | None) -> None:
    assert detect_target_type(message, SCHEMAS) == target


def test_detect_target_type_uses_types_aliases() -> None:
    assert detect_target_type("neuer Artikel", SCHEMAS, {"source": ["artikel"]}) == "source"


def test_detect_target_type_ignores_aliases_without_schema() -> None:
    assert detect_target_type("neue Aufgabe", SCHEMAS, {"task": ["aufgabe"]}) is None


def test_detect_target_type_longest_name_wins() -> None:
    schemas = {"note": InterviewSchema(aliases=["notiz"]),
               "meeting": InterviewSchema(aliases=["meeting notiz"])}
    assert detect_target_type("Neue Meeting-Notiz", schemas) == "meeting"


def test_detect_target_type_tie_goes_to_first_schema() -> None:
    schemas = {"first": InterviewSchema(aliases=["abc"]), "second": InterviewSchema(aliases=["xyz"])}
    assert detect_target_type("xyz oder abc", schemas) == "first"
