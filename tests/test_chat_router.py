"""The intent router: keywords (longest wins), LLM classification, the default when the LLM fails."""

from __future__ import annotations

import pytest
from llama_index.core.tools import ToolMetadata

from mindnet.chat.llm import LLMGate
from mindnet.chat.selector import IntentSelector, parse_llm_choice
from mindnet.settings import Settings

NAMES = ["FACT", "DECISION", "EMPATHY", "CODING", "INTERVIEW"]


def make_selector(url: str) -> IntentSelector:
    settings = Settings(ollama_url=url, llm_model="phi3:mini", llm_timeout=5)
    return IntentSelector.from_settings(settings, gate=LLMGate(settings=settings))


def choices() -> list[ToolMetadata]:
    return [ToolMetadata(name=n, description=f"{n} strategy") for n in NAMES]


def chosen(selector: IntentSelector, message: str) -> tuple[str, str]:
    result = selector.select(choices(), message)
    return NAMES[result.ind], result.reason


@pytest.mark.parametrize(("message", "strategy", "keyword"), [
    ("Was ist Qdrant?", "FACT", "was ist"),
    ("What is hybrid search?", "FACT", "what is"),
    ("Soll ich Qdrant nehmen?", "DECISION", "soll ich"),
    ("Should I switch databases?", "DECISION", "should i"),
    ("Ich fühle mich heute müde", "EMPATHY", "ich fühle mich"),
    ("I feel lonely today", "EMPATHY", "i feel"),
    ("Wie schreibe ich diese Funktion?", "CODING", "funktion"),
    ("My script crashes", "CODING", "script"),
    ("Neues Projekt: Gemüsegarten", "INTERVIEW", "neues projekt"),
    ("Please create a note about my garden", "INTERVIEW", "create a note"),
])
def test_keyword_routes_each_strategy(fake_ollama, message, strategy, keyword):
    assert chosen(make_selector(fake_ollama.url), message) == (strategy, f"keyword '{keyword}' matched")
    assert fake_ollama.count("/api/chat") == 0


@pytest.mark.parametrize(("message", "strategy", "keyword"), [
    ("Soll ich den Code refactoren?", "DECISION", "soll ich"),
    ("Ich will ein neues Projekt in Python anlegen", "INTERVIEW", "neues projekt"),
])
def test_longest_keyword_wins_over_shorter_one(fake_ollama, message, strategy, keyword):
    assert chosen(make_selector(fake_ollama.url), message) == (strategy, f"keyword '{keyword}' matched")


def test_llm_classifies_message_without_keyword(fake_ollama):
    fake_ollama.script(["DECISION"])
    assert chosen(make_selector(fake_ollama.url), "Qdrant oder Chroma für mein Projekt?") == \
        ("DECISION", "no keyword; LLM said 'DECISION'")
    assert "Qdrant oder Chroma für mein Projekt?" in fake_ollama.bodies("/api/chat")[0]["messages"][-1]["content"]


async def test_llm_classifies_message_without_keyword_async(fake_ollama):
    fake_ollama.script(["Strategie: EMPATHY."])
    result = await make_selector(fake_ollama.url).aselect(choices(), "Heute war ein schwerer Tag")
    assert (NAMES[result.ind], result.reason) == ("EMPATHY", "no keyword; LLM said 'EMPATHY'")


def test_unusable_llm_answer_falls_back_to_default(fake_ollama):
    fake_ollama.script(["I am not sure"])
    assert chosen(make_selector(fake_ollama.url), "Qdrant oder Chroma?") == \
        ("FACT", "no keyword; LLM said 'I am not sure', not one strategy -> default FACT")


def test_llm_answer_naming_two_strategies_falls_back_to_default(fake_ollama):
    fake_ollama.script(["FACT or DECISION"])
    assert chosen(make_selector(fake_ollama.url), "Qdrant oder Chroma?")[0] == "FACT"


def test_unreachable_llm_falls_back_to_default_with_reason(fake_ollama):
    url = fake_ollama.url
    fake_ollama.stop()
    assert chosen(make_selector(url), "Qdrant oder Chroma?") == ("FACT", "no keyword; LLM unreachable -> default FACT")


def test_missing_model_falls_back_to_default_without_chat_call(fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    assert chosen(make_selector(fake_ollama.url), "Qdrant oder Chroma?") == \
        ("FACT", "no keyword; LLM unreachable -> default FACT")
    assert fake_ollama.count("/api/chat") == 0


def test_reachability_is_checked_once_per_ttl(fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    selector = make_selector(fake_ollama.url)
    chosen(selector, "Qdrant oder Chroma?")
    chosen(selector, "Und jetzt?")
    assert fake_ollama.count("/api/tags") == 1


@pytest.mark.parametrize(("answer", "expected"), [
    ("DECISION", "DECISION"), ("decision", "DECISION"), ("  CODING.\n", "CODING"),
    ("FACT FACT", "FACT"), ("FACT DECISION", None), ("nothing", None), ("", None),
])
def test_parse_llm_choice(answer, expected):
    assert parse_llm_choice(answer, NAMES) == expected


def test_an_llm_that_answers_http_500_is_failed_not_unreachable(fake_ollama):
    fake_ollama.chat_mode = "error"
    assert chosen(make_selector(fake_ollama.url), "Qdrant oder Chroma?") == \
        ("FACT", "no keyword; LLM failed (Ollama answered with an error) -> default FACT")
