"""Prompt templates under prompts/ and load_prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindnet.chat.prompts import available_prompts, load_prompt
from mindnet.errors import ConfigError
from mindnet.settings import REPO_ROOT

PROMPTS = REPO_ROOT / "prompts"


@pytest.mark.parametrize(("name", "variables"), [
    ("system", set()),
    ("fact", {"context_str", "query_str"}),
    ("decision", {"context_str", "query_str"}),
    ("empathy", {"context_str", "query_str"}),
    ("coding", {"context_str", "query_str"}),
    ("router", {"strategies", "query_str"}),
    ("interview", {"target_type", "schema", "history", "query_str"}),
    ("condense", {"chat_history", "question"}),
])
def test_shipped_prompt_placeholders(name: str, variables: set[str]) -> None:
    assert set(load_prompt(name, PROMPTS).template_vars) == variables


@pytest.mark.parametrize("name", ["fact", "decision", "empathy", "coding"])
def test_rag_prompts_ask_for_bracket_citations(name: str) -> None:
    assert "eckigen Klammern" in load_prompt(name, PROMPTS).template


def test_format_fills_placeholders() -> None:
    text = load_prompt("fact", PROMPTS).format(context_str="CTX-123", query_str="Q-456")
    assert ("CTX-123" in text, "Q-456" in text, "{" in text) == (True, True, False)


def test_interview_prompt_formats_without_leftover_braces() -> None:
    prompt = load_prompt("interview", PROMPTS)
    text = prompt.format(target_type="project", schema="S", history="H", query_str="Q")
    assert "{" not in text and "```markdown" in text


def test_available_prompts_lists_stems(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("B", encoding="utf-8")
    (tmp_path / "a.md").write_text("A", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert available_prompts(tmp_path) == ["a", "b"]


def test_missing_prompt_names_file_and_alternatives(tmp_path: Path) -> None:
    (tmp_path / "fact.md").write_text("{query_str}", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_prompt("facts", tmp_path)
    assert str(tmp_path / "facts.md") in str(err.value) and "available: fact" in str(err.value)


def test_missing_prompts_dir_says_none_available(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"available: \(none\)"):
        load_prompt("fact", tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["../secret", "sub/fact", "fact.md", ""])
def test_prompt_name_must_be_a_stem(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="is invalid"):
        load_prompt(name, tmp_path)


def test_empty_prompt_file_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "fact.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is empty"):
        load_prompt("fact", tmp_path)


def test_loaded_template_keeps_text(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("\nHallo {name}\n\n", encoding="utf-8")
    assert load_prompt("x", tmp_path).template == "Hallo {name}\n"
