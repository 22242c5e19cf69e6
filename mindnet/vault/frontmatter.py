"""YAML frontmatter between `---` fences at the top of a note, read as Obsidian reads it (YAML 1.2).

PyYAML speaks YAML 1.1, where `no`, `yes`, `on` and `off` are booleans, `010` is octal 8, `1:30` is 90 and
`2024-05-01` a date. Obsidian's properties follow YAML 1.2's core schema: only `true`/`false` are booleans,
and what looks like a date stays the text written. The loader here resolves plain scalars by the core schema,
and a list of plain values (`tags: [no, 2024, 1.10]`) keeps every item as the string the user wrote
(`["no", "2024", "1.10"]`), as do the name properties (`title`, `aliases`, `tags`, `id`, `type`, ...).

A template placeholder written as a value (`description: {{description}}`, not valid YAML) leaves out only
that property: the rest of the frontmatter is kept, and a warning names its line.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from mindnet.errors import VaultError

FENCE = "---"
MAX_FRONTMATTER_CHARS = 64_000
# properties whose value is a name or a list of names: kept as written (a title `1984`, an id `007`)
NAME_KEYS = frozenset({"title", "aliases", "alias", "tags", "tag", "id", "type", "cssclasses", "cssclass"})
_PLACEHOLDER_LINE = re.compile(r"^(\s*(?:- |[^:#\s][^:#]*:\s+))\{\{[^\n]*$")
_CORE = [   # YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
]


class _CoreSchema:
    """YAML 1.2's core schema on PyYAML's safe constructor, mixed into the two loaders below."""

    def construct_yaml_int(self, node):  # type: ignore[no-untyped-def]
        value = str(self.construct_scalar(node))
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        return int(value, 10)

    def construct_yaml_bool(self, node):  # type: ignore[no-untyped-def]
        return str(self.construct_scalar(node)).lower() == "true"

    def construct_yaml_seq(self, node):  # type: ignore[no-untyped-def]
        if all(isinstance(item, yaml.ScalarNode) for item in node.value):
            yield [_as_written(self, item) for item in node.value]   # a list of names keeps what was written
            return
        yield from super().construct_yaml_seq(node)  # type: ignore[misc]

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        mapping = super().construct_mapping(node, deep=deep)  # type: ignore[misc]
        for key_node, value_node in node.value:
            if isinstance(value_node, yaml.ScalarNode) and isinstance(key_node, yaml.ScalarNode) \
                    and key_node.value in NAME_KEYS:
                mapping[key_node.value] = _as_written(self, value_node)
        return mapping


class _FrontmatterLoader(_CoreSchema, yaml.SafeLoader):
    """Safe YAML 1.2 (core schema) without aliases: `*name` references can recurse or expand exponentially
    ("billion laughs"), and frontmatter never needs them. Pure Python: it sees every node as it is composed."""

    yaml_implicit_resolvers: dict = {}

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not supported in frontmatter",
                                              event.start_mark)
        return super().compose_node(parent, index)


# libyaml's parser (C, about 10x faster; a 30,000-note import spent 8% of its time in the pure-Python one) for
# frontmatter that can hold neither an alias (no "*" or "&") nor deep flow nesting (libyaml's composer recurses
# in C, where a `[[[[...` thousands deep would overflow the stack instead of raising RecursionError)
_FAST_MAX_BRACKETS = 64
_CLoader = getattr(yaml, "CSafeLoader", None)
_FastLoader: type | None = None
if _CLoader is not None:
    class _FastLoader(_CoreSchema, _CLoader):  # type: ignore[no-redef,valid-type,misc]
        yaml_implicit_resolvers: dict = {}


def _load(raw: str) -> Any:
    loader = _loader_for(raw)
    try:
        return yaml.load(raw, Loader=loader)
    except yaml.YAMLError:
        if loader is _FrontmatterLoader:
            raise
    # YAML that does not parse: the pure-Python parser's message and line (libyaml words some differently)
    return yaml.load(raw, Loader=_FrontmatterLoader)


def _loader_for(raw: str) -> type:
    if _FastLoader is None or "*" in raw or "&" in raw \
            or raw.count("[") + raw.count("{") > _FAST_MAX_BRACKETS:
        return _FrontmatterLoader
    return _FastLoader


for _loader in (_FrontmatterLoader, _FastLoader):
    if _loader is None:
        continue
    for _tag, _pattern, _first in _CORE:
        _loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
    _loader.add_constructor("tag:yaml.org,2002:int", _CoreSchema.construct_yaml_int)
    _loader.add_constructor("tag:yaml.org,2002:bool", _CoreSchema.construct_yaml_bool)
    _loader.add_constructor("tag:yaml.org,2002:seq", _CoreSchema.construct_yaml_seq)


def _as_written(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A plain or quoted scalar as the text written; a null stays None."""
    if node.tag == "tag:yaml.org,2002:null":
        return None
    return str(node.value) if node.tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int",
                                           "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool") \
        else loader.construct_object(node)


def split_fences(text: str, *, path: str = "") -> tuple[str | None, str, int]:
    """(raw YAML or None, body, body_first_line). Raises VaultError for an opening fence that never closes;
    its `body` would be the whole text."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != FENCE:
        return None, text, 1
    for end in range(1, len(lines)):
        if lines[end].strip() in (FENCE, "..."):
            break
    else:
        raise VaultError("frontmatter opened with '---' but never closed", path=path, line=1,
                         hint="add a closing '---' line after the YAML block")
    return "\n".join(lines[1:end]), "\n".join(lines[end + 1:]), end + 2


def parse_yaml(raw: str, *, path: str = "") -> dict[str, Any]:
    """The frontmatter mapping. Raises VaultError naming the line for YAML that cannot become one."""
    return parse_yaml_lines(raw, path=path)[0]


def parse_yaml_lines(raw: str, *, path: str = "") -> tuple[dict[str, Any], list[int]]:
    """The frontmatter mapping and the frontmatter lines (1-based, in the file) left out as template
    placeholders. Raises VaultError naming the line for YAML that cannot become a mapping."""
    try:
        return _parse(raw, path=path), []
    except VaultError:
        lines = raw.split("\n")
        placeholders = [no for no, line in enumerate(lines) if "{{" in line and _PLACEHOLDER_LINE.match(line)]
        if not placeholders:
            raise
        for no in placeholders:
            lines[no] = ""
        try:
            return _parse("\n".join(lines), path=path), [no + 2 for no in placeholders]
        except VaultError:
            pass
        raise


def _parse(raw: str, *, path: str = "") -> dict[str, Any]:
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise VaultError(f"frontmatter is {len(raw)} characters long (limit {MAX_FRONTMATTER_CHARS})", path=path,
                         line=1, hint="move long text from the frontmatter into the note body")
    try:
        meta = _load(raw) if raw.strip() else {}
    except ValueError as exc:  # a date that does not exist (2024-02-30) is a ValueError, not a YAMLError
        raise VaultError(f"frontmatter has an impossible value: {exc}", path=path, line=1,
                         hint="check dates (YYYY-MM-DD) and numbers in the frontmatter") from exc
    except RecursionError:
        # the YAML composer recurses once per level: `[[[[...` thousands deep exhausts the stack
        raise VaultError("frontmatter is nested too deeply", path=path, line=1,
                         hint="flatten the nested lists or mappings") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1 for the fence, +1 for 1-based lines
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise VaultError(f"frontmatter is not valid YAML: {problem}", path=path, line=line,
                         hint="check quotes and indentation of that line") from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise VaultError(f"frontmatter must be a mapping of keys, got {type(meta).__name__}", path=path, line=2,
                         hint="write it as 'key: value' lines")
    return {str(k): v for k, v in meta.items()}


def split_frontmatter(text: str, *, path: str = "") -> tuple[dict[str, Any], str, int]:
    """Return (frontmatter, body, body_first_line). Lines are 1-based.

    A note without a leading fence has empty frontmatter. An opening fence without a closing one, YAML that
    does not parse, or YAML that is not a mapping raise a VaultError naming the line.
    """
    raw, body, body_line = split_fences(text, path=path)
    return (parse_yaml(raw, path=path) if raw is not None else {}), body, body_line


def as_string_list(value: Any) -> list[str]:
    """Frontmatter lists come as YAML lists or as comma strings ("a, b"); both become a clean list."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple | set) else str(value).split(",")
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        s = str(item).strip().strip("'\"").strip()   # "a, 'b'" written as one string keeps its quotes
        if s and s not in out:
            out.append(s)
    return out
