"""docs/configuration.md is generated from the config models (mindnet/config_docs.py) and kept current: it names
every key of the four config files and every MINDNET_* variable the code reads."""

from __future__ import annotations

import re

from mindnet import config_docs
from mindnet.settings import PACKAGE_ROOT, REPO_ROOT, Settings

DOC = REPO_ROOT / "docs" / "configuration.md"
_ENV = re.compile(r"MINDNET_[A-Z0-9_]*[A-Z0-9]")


def test_the_file_is_current() -> None:
    assert DOC.is_file(), f"docs/configuration.md is missing: run `{config_docs.COMMAND}`"
    assert DOC.read_text(encoding="utf-8") == config_docs.render(), (
        f"docs/configuration.md is stale (the config models changed): run `{config_docs.COMMAND}`")


def test_every_key_is_documented() -> None:
    text = config_docs.render()
    for file, model, _ in config_docs.CONFIG_MODELS:
        section = text.split(f"## {file}\n", 1)[1].split("\n## ", 1)[0]
        for path, info in config_docs.walk(model):
            assert f"| `{path}` |" in section, f"{file}: {path} is missing"
            assert info.description, f"{file}: {path} has no description: add Field(description=...) in settings.py"


def test_nested_models_are_walked() -> None:
    text = config_docs.render()
    for key in ("`types.*.retriever_weight`", "`mentions.common_max_notes`", "`graph.hub_degree`",
                "`strategies.*.retrieval.top_k`", "`relations.type_pairs[].kind`", "`chunk_profiles.*.max_words`"):
        assert key in text, key


def test_every_environment_variable_is_documented() -> None:
    text = config_docs.render()
    env = text.split("## Environment variables\n", 1)[1]
    fields = {f"MINDNET_{name.upper()}" for name in Settings.model_fields}
    in_code = set()
    for folder in (PACKAGE_ROOT, REPO_ROOT / ".ci"):
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in {".py", ""} and "__pycache__" not in path.parts:
                in_code |= set(_ENV.findall(path.read_text(encoding="utf-8", errors="replace")))
    in_code |= set(_ENV.findall("\n".join(p.read_text(encoding="utf-8") for p in (REPO_ROOT / "tests").glob("*.py")
                                          if p.name != "test_config_docs.py")))
    missing = sorted(v for v in fields | in_code if f"| `{v}` |" not in env)
    assert not missing, f"not in docs/configuration.md: {missing} (add them to mindnet/config_docs.py EXTRA_ENV)"
    for name, info in Settings.model_fields.items():
        assert info.description, f"Settings.{name} has no description"


def test_no_path_of_this_machine() -> None:
    text = config_docs.render()
    assert str(PACKAGE_ROOT) not in text and str(REPO_ROOT) not in text
    assert "<package>/sample_vault" in text


def test_the_extra_notes_name_real_fields() -> None:
    assert set(config_docs.ENV_DETAILS) <= set(Settings.model_fields)
    assert not set(config_docs.EXTRA_ENV) & {f"MINDNET_{n.upper()}" for n in Settings.model_fields}
