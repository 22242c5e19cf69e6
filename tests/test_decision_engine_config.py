"""config/decision_engine.yaml loads into DecisionEngineConfig and fits types.yaml and prompts/."""

from __future__ import annotations

import pytest

from mindnet.chat.keywords import KeywordMatcher
from mindnet.chat.prompts import load_prompt
from mindnet.settings import REPO_ROOT, DecisionEngineConfig, Settings, TypesConfig

CONFIG = REPO_ROOT / "config"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(env={}, config_dir=CONFIG, prompts_dir=REPO_ROOT / "prompts")


@pytest.fixture(scope="module")
def engine(settings: Settings) -> DecisionEngineConfig:
    return settings.decision_engine


def test_from_env_loads_the_decision_engine(engine: DecisionEngineConfig) -> None:
    assert list(engine.strategies) == ["FACT", "DECISION", "EMPATHY", "CODING", "INTERVIEW"]


def test_top_level_settings(engine: DecisionEngineConfig) -> None:
    top = (engine.default_strategy, engine.llm_fallback_enabled, engine.router_prompt)
    assert top == ("FACT", True, "router")


def test_schemas_cover_every_note_type(settings: Settings, engine: DecisionEngineConfig) -> None:
    types: TypesConfig = settings.types
    # index notes (link lists, detected at import) are never drafted by an interview
    assert set(engine.schemas) == set(types.types) - {types.index_type()}


def test_interview_does_not_retrieve(engine: DecisionEngineConfig) -> None:
    assert engine.strategies["INTERVIEW"].retrieval is None


@pytest.mark.parametrize("name", ["FACT", "DECISION", "EMPATHY", "CODING"])
def test_rag_strategies_retrieve(engine: DecisionEngineConfig, name: str) -> None:
    assert engine.strategies[name].retrieval is not None


@pytest.mark.parametrize(("name", "inject"), [
    ("DECISION", ["value", "decision"]),
    ("EMPATHY", ["experience", "value"]),
    ("CODING", ["concept", "source"]),
    ("FACT", []),
    ("INTERVIEW", []),
])
def test_inject_types(engine: DecisionEngineConfig, name: str, inject: list[str]) -> None:
    assert engine.strategies[name].inject_types == inject


def test_inject_types_are_known_note_types(settings: Settings, engine: DecisionEngineConfig) -> None:
    unknown = {t for s in engine.strategies.values() for t in s.inject_types} - set(settings.types.types)
    assert unknown == set()


def test_every_strategy_prompt_exists(settings: Settings, engine: DecisionEngineConfig) -> None:
    names = [s.prompt for s in engine.strategies.values()] + [engine.router_prompt]
    assert [load_prompt(n, settings.prompts_dir).metadata["name"] for n in names] == names


@pytest.mark.parametrize(("message", "strategy"), [
    ("Soll ich das Jobangebot annehmen?", "DECISION"),
    ("Should I move to Berlin?", "DECISION"),
    ("Was sind die Vor- und Nachteile von Qdrant?", "DECISION"),
    ("Ich fühle mich heute so gestresst", "EMPATHY"),
    ("I feel overwhelmed by work", "EMPATHY"),
    ("Mein Python-Script wirft einen Error", "CODING"),
    ("Neues Projekt: Gemüsegarten", "INTERVIEW"),
    ("Neue Entscheidung festhalten", "INTERVIEW"),
    ("Capture a new decision about hosting", "INTERVIEW"),
    ("Was ist ein Knowledge Graph?", "FACT"),
    ("Who is Ada Lovelace?", "FACT"),
])
def test_shipped_keywords_route(engine: DecisionEngineConfig, message: str, strategy: str) -> None:
    hit = KeywordMatcher(engine.strategies).match(message)
    assert hit is not None and hit.strategy == strategy


@pytest.mark.parametrize(("type_name", "required"), [
    ("project", ["title", "status", "goal"]),
    ("decision", ["title", "status", "decision"]),
])
def test_schema_required_fields(engine: DecisionEngineConfig, type_name: str, required: list[str]) -> None:
    assert engine.schemas[type_name].required == required


def test_decision_schema_sections(engine: DecisionEngineConfig) -> None:
    assert engine.schemas["decision"].sections == ["Kontext", "Entscheidung", "Alternativen", "Konsequenzen"]


def test_every_schema_requires_a_title(engine: DecisionEngineConfig) -> None:
    assert [n for n, s in engine.schemas.items() if "title" not in s.required] == []
