r"""ATX headings (`## Title ##`), read in linear time.

The obvious pattern `^(#{1,6})\s+(.*?)\s*#*\s*$` backtracks cubically on a heading with a long run of spaces
before a non-space (`# Titel` + 4,000 spaces + `x` took 84 s), so the regex only splits off the marker and the
closing sequence is removed with string methods.
"""

from __future__ import annotations

import re

# `[^\S\n]` is whitespace other than a newline; possessive so a failed match never re-splits the run
_ATX = re.compile(r"(#{1,6})[^\S\n]++([^\n]*)")
_H1_LINE = re.compile(r"^#[^\S\n]++([^\n]*)", re.MULTILINE)


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


def first_h1(text: str) -> str | None:
    """The text of the first level-1 heading with any text, or None."""
    for m in _H1_LINE.finditer(text):
        title = heading_text(m.group(1))
        if title:
            return title
    return None
