"""YAML frontmatter between `---` fences at the top of a note."""

from __future__ import annotations

from typing import Any

import yaml

from mindnet.errors import VaultError

FENCE = "---"
MAX_FRONTMATTER_CHARS = 64_000


class _FrontmatterLoader(yaml.SafeLoader):
    """Safe YAML without aliases: `*name` references can recurse or expand exponentially ("billion laughs"),
    and frontmatter never needs them."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not supported in frontmatter",
                                              event.start_mark)
        return super().compose_node(parent, index)


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
    if len(raw) > MAX_FRONTMATTER_CHARS:
        raise VaultError(f"frontmatter is {len(raw)} characters long (limit {MAX_FRONTMATTER_CHARS})", path=path,
                         line=1, hint="move long text from the frontmatter into the note body")
    try:
        meta = yaml.load(raw, Loader=_FrontmatterLoader) if raw.strip() else {}
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
