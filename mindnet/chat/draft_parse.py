"""Reading an LLM reply as a note: the code block that holds it, the frontmatter and its fields, headings.

The parsing half of the interview sanitizer (`mindnet.chat.sanitizer` holds the repair rules and
the public functions). The readers never raise on a bad reply; they report what they had to guess in `warnings`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from mindnet.vault.headings import parse_heading

_DRAFT_INFOS = {"markdown", "md", "yaml", "yml", ""}   # code blocks that may hold the note
_NESTING_INFOS = {"markdown", "md", ""}                # may contain inner ```lang blocks
_MAX_TITLE = 80

# Possessive quantifiers (*+, ++) keep these linear on hostile lines: adjacent runs that could share characters
# (spaces, the info word, the rest) are never re-split when the line fails to match in the end.
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}+|~{3,}+)[ \t]*+(?P<info>[^`\s]*+)[^`]*+$")
# the key runs to the first colon; its trailing blanks are stripped by the reader
_KEY_LINE = re.compile(r"^[ \t]*+-?[ \t]*+(?P<key>[^\s:#\-\[\]{}][^:]*+):(?:[ \t]+(?P<value>.*))?[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*-(?:[ \t]+(?P<item>.*))?$")
_FM_FENCE = {"---", "..."}
# safe_load raises ValueError (not YAMLError) for impossible dates such as 2024-13-45, RecursionError for
# thousands of nested brackets
_YAML_ERRORS = (yaml.YAMLError, ValueError, TypeError, RecursionError)


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without aliases, as the import reads notes: nested `*name` references expand exponentially
    (a 300-byte "billion laughs" draft froze the server for 15 s)."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.events.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not supported in notes",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass


# --------------------------------------------------------------------------- code blocks


@dataclass(frozen=True)
class _Block:
    info: str
    content: str
    closed: bool


def _clean_newlines(text: str) -> str:
    """Unix newlines, no BOM, and U+FFFD for unpaired surrogates (they cannot be saved as UTF-8)."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _code_blocks(text: str) -> list[_Block]:
    lines = text.split("\n")
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m["fence"], m["info"].lower()
        # LLMs nest ```python inside a ```markdown block with the same fence; count those
        nests = len(fence) == 3 and info in _NESTING_INFOS
        depth, j, content, closed = 0, i + 1, [], False
        while j < len(lines):
            inner = _FENCE.match(lines[j])
            if inner and inner["fence"][0] == fence[0] and len(inner["fence"]) >= len(fence):
                if inner["info"]:
                    depth += 1 if nests else 0
                elif depth:
                    depth -= 1
                else:
                    closed = True
                    break
            content.append(lines[j])
            j += 1
        blocks.append(_Block(info, "\n".join(content), closed))
        i = j + 1
    return blocks


def _starts_with_frontmatter(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    return first.strip() == "---"


def _extract_note_text(reply: str, warnings: list[str]) -> str:
    if _starts_with_frontmatter(reply):
        return reply  # the reply is the note itself; its code blocks belong to the body
    candidates = [b for b in _code_blocks(reply) if b.info in _DRAFT_INFOS]
    if not candidates:
        return _drop_preamble(reply, warnings)
    with_meta = [b for b in candidates if _starts_with_frontmatter(b.content)]
    chosen = max(with_meta or candidates, key=lambda b: len(b.content))  # first on ties
    if len(candidates) > 1:
        why = "the one with frontmatter" if with_meta else "the longest"
        warnings.append(f"the reply had {len(candidates)} code blocks; used {why}")
    if not chosen.closed:
        warnings.append("the code block was not closed; used the text up to the end of the reply")
    if chosen.info in {"yaml", "yml"} and not _starts_with_frontmatter(chosen.content):
        return f"---\n{chosen.content}\n---\n"  # a bare YAML block is the frontmatter
    return chosen.content


def _drop_preamble(reply: str, warnings: list[str]) -> str:
    """Without a code block, chatter before a complete frontmatter ("Hier ist der Entwurf:") is dropped."""
    lines = reply.split("\n")
    for i, line in enumerate(lines):
        if line.strip() != "---":
            continue
        end = _closing_fence(lines, i)
        if end is not None and end > i + 1 and _KEY_LINE.match(lines[i + 1]):
            warnings.append("dropped the text before the frontmatter: "
                            + _shorten(" ".join(x.strip() for x in lines[:i] if x.strip())))
            return "\n".join(lines[i:])
        break
    return reply


# --------------------------------------------------------------------------- frontmatter


def _yamlish(line: str) -> bool:
    """Could this line be part of a YAML mapping written by an LLM?"""
    return (not line.strip() or line.lstrip().startswith("#") or bool(_KEY_LINE.match(line))
            or bool(_LIST_ITEM.match(line)) or line[:1] in (" ", "\t"))


def _closing_fence(lines: list[str], start: int) -> int | None:
    for j in range(start + 1, len(lines)):
        if lines[j].strip() in _FM_FENCE:
            return j if all(_yamlish(x) for x in lines[start + 1:j]) else None
    return None


def _split_frontmatter(text: str, warnings: list[str]) -> tuple[str | None, str]:
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or lines[start].strip() != "---":
        return None, text
    end = _closing_fence(lines, start)
    if end is not None:
        return "\n".join(lines[start + 1:end]), "\n".join(lines[end + 1:])
    # unclosed: the frontmatter ends at the first line that is not YAML (headings count as not YAML)
    end = start + 1
    while end < len(lines) and _yamlish(lines[end]) and not lines[end].lstrip().startswith("#"):
        end += 1
    fence = next((j for j in range(start + 1, len(lines)) if lines[j].strip() in _FM_FENCE), None)
    if fence is not None and not any(_KEY_LINE.match(x) for x in lines[start + 1:end]):
        # closed, but nothing in it looks like a field: hand it over whole (it ends up in the body)
        return "\n".join(lines[start + 1:fence]), "\n".join(lines[fence + 1:])
    warnings.append(f"the frontmatter had no closing '---'; closed it before line {end + 1} of the draft")
    return "\n".join(lines[start + 1:end]), "\n".join(lines[end:])


def _parse_frontmatter(fm_text: str, warnings: list[str]) -> tuple[dict[str, Any], str]:
    """Fields of a frontmatter block, and the text that could not be read as fields (for the body)."""
    try:
        data = _load_yaml(fm_text)
        error = None
    except _YAML_ERRORS as exc:
        data, error = None, exc
    if error is None:
        if data is None:
            return {}, ""
        if isinstance(data, dict):
            return {str(k): v for k, v in data.items()}, ""
        if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
            warnings.append("the frontmatter was a list of fields; merged them into one mapping")
            merged: dict[str, Any] = {}
            for item in data:
                for k, v in item.items():
                    merged.setdefault(str(k), v)
            return merged, ""
    fields, rest = _parse_lines(fm_text)
    problem = _yaml_problem(error) if error else f"it is a {type(data).__name__}, not a mapping"
    if not fields:
        warnings.append(f"the frontmatter could not be read ({problem}); moved it into the body")
        return {}, fm_text.strip("\n")
    warnings.append(f"the frontmatter is not valid YAML ({problem}); read it line by line")
    if rest:
        warnings.append(f"moved {len(rest)} unreadable frontmatter line(s) into the body")
    return fields, "\n".join(rest)


def _yaml_problem(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return f"line {mark.line + 1}: {problem}" if mark else str(problem)


def _parse_lines(fm_text: str) -> tuple[dict[str, Any], list[str]]:
    """Lenient `key: value` reader; `- item` lines under an empty key become its list."""
    fields: dict[str, Any] = {}
    rest: list[str] = []
    current: str | None = None
    for line in fm_text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _LIST_ITEM.match(line)
        if item and current is not None and (fields[current] is None or isinstance(fields[current], list)):
            fields[current] = [*(fields[current] or []), _scalar(item["item"] or "")]
            continue
        key = _KEY_LINE.match(line)
        if key:
            name = key["key"].strip().strip("\"'")
            current = name
            fields.setdefault(name, _scalar(key["value"] or ""))
            continue
        rest.append(line.strip())
    return fields, rest


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = _load_yaml(raw)
    except _YAML_ERRORS:
        return raw.strip("\"'")
    # "title: Plan B: Umzug" must stay text, not become a mapping {"Plan B": "Umzug"}
    return raw if isinstance(value, dict) else value


def _merge_leading_frontmatters(body: str, fields: dict[str, Any], warnings: list[str]) -> str:
    """A body must not start with another `---` block: merge a second frontmatter, drop a bare rule."""
    while _starts_with_frontmatter(body):
        lines = body.split("\n")
        start = next(i for i, line in enumerate(lines) if line.strip())
        end = _closing_fence(lines, start)
        extra: dict[str, Any] = {}
        if end is not None:
            try:
                loaded = _load_yaml("\n".join(lines[start + 1:end]))
                extra = loaded if isinstance(loaded, dict) else {}
            except _YAML_ERRORS:
                extra = {}
        if extra:
            for k, v in extra.items():
                fields.setdefault(str(k), v)
            warnings.append("the body started with a second frontmatter; merged its fields")
            body = "\n".join(lines[end + 1:])
        else:
            warnings.append("removed a '---' line at the start of the body (it would read as frontmatter)")
            body = "\n".join(lines[start + 1:])
    return body


# --------------------------------------------------------------------------- headings and titles


def _shorten(text: str, limit: int = _MAX_TITLE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of the ATX headings outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m["fence"]
            elif m["fence"][0] == fence[0] and len(m["fence"]) >= len(fence) and not m["info"]:
                fence = None
            continue
        if fence is None:
            h = parse_heading(line)
            if h:
                found.append((i, *h))
    return found
