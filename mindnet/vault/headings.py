r"""ATX headings (`## Title ##`), read in linear time. Nothing inside code, math or a comment is a heading (the
caller passes the body masked by `mindnet.vault.masking`), and neither is a heading that holds a template
placeholder (`# {{title}}`, `# Entscheidung: {{title}}`: a template's line, not a note's title).

The obvious pattern `^(#{1,6})\s+(.*?)\s*#*\s*$` backtracks cubically on a heading with a long run of spaces
before a non-space (`# Titel` + 4,000 spaces + `x` took 84 s), so the regex only splits off the marker and the
closing sequence is removed with string methods.
"""

from __future__ import annotations

import re

# `[^\S\n]` is whitespace other than a newline; possessive so a failed match never re-splits the run
_ATX = re.compile(r"(#{1,6})[^\S\n]++([^\n]*)")
_H1_LINE = re.compile(r"^#[^\S\n]++([^\n]*)", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{\{[^{}\n]*+\}\}")


def has_placeholder(text: str) -> bool:
    """Whether `text` holds a template placeholder such as `{{title}}` or `{{date:YYYY-MM-DD}}`."""
    return "{{" in text and PLACEHOLDER.search(text) is not None


def heading_text(raw: str) -> str:
    """The text of a heading line after its marker: trailing whitespace and a closing `#` run go (CommonMark:
    the run must follow whitespace, so `C#` stays `C#`)."""
    text = raw.rstrip()
    without = text.rstrip("#")
    if without != text and (not without or without[-1].isspace()):
        text = without.rstrip()
    return text


def parse_heading(line: str) -> tuple[int, str] | None:
    """(level, text) when `line` is an ATX heading (1-6 `#`, then whitespace), else None."""
    m = _ATX.match(line)
    if m is None:
        return None
    return len(m.group(1)), heading_text(m.group(2))


def first_h1(text: str, masked: str | None = None) -> str | None:
    """The text of the first level-1 heading with any text and no template placeholder, or None. `masked`:
    `text` with code, math and comments blanked (`mask_code`: the same lines): a heading must be one there too,
    and its text is read from `text` (an inline code span in a title stays)."""
    if masked is None:
        candidates = (m.group(1) for m in _H1_LINE.finditer(text))
    else:
        lines = text.split("\n")
        candidates = (lines[no][1:] for no, line in enumerate(masked.split("\n"))
                      if line.startswith("#") and _H1_LINE.match(line) and no < len(lines))
    for raw in candidates:
        title = heading_text(raw.lstrip())
        if title and not has_placeholder(title):
            return title
    return None
