r"""What of a note is not prose: code, math and comments, blanked so links, tags, titles and headings in them are
never read (Obsidian does not read them either).

    ```code``` / ~~~code~~~ fences          whole lines, emptied
    `inline code`                            spaces of the same length
    $$display math$$ (may span lines)        spaces of the same length
    $inline math$                            spaces (the opening `$` followed and the closing `$` preceded by a
                                             non-space, the closing one not followed by a digit: "$5 and $10"
                                             stays text)
    <!-- HTML comment --> (may span lines)   spaces of the same length
    %% Obsidian comment %% (may span lines)  spaces of the same length

An opener without a closer anywhere after it is text. Every line keeps its number, and every line outside a
fence its length, so offsets and line numbers of what is left stay valid. Linear in the text: one scan, the
closer of a multi-line region is found with one `str.find`, and whether a closer exists at all is one comparison
with the position of the last closer in the text.
"""

from __future__ import annotations

import re

from mindnet.vault.budget import checkpoint

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# the next thing to mask on a line: a whole code span, a whole inline math span, or the opener of a region
_INLINE = re.compile(r"`[^`\n]*+`|<!--|%%|\$\$|\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)")
_CLOSER = {"<!--": "-->", "%%": "%%", "$$": "$$"}


def mask_code(text: str, *, body: bool = False) -> str:
    """`text` with code, math and comments blanked (see the module docstring). `body`: the text is a note's body,
    read under the import's per-note budget (`mindnet.vault.budget`)."""
    last = {opener: text.rfind(closer) for opener, closer in _CLOSER.items()}
    out: list[str] = []
    fence: str | None = None       # the open fence (``` or ~~~, possibly longer)
    region: str | None = None      # the open multi-line region's closer
    line_end = -1                  # where the current line ends in `text`
    for no, line in enumerate(text.split("\n")):
        if body:
            checkpoint(no)
        line_end += len(line) + 1
        if region is None:
            if fence is None:
                match = FENCE.match(line)
                if match:
                    fence = match.group(1)
                    out.append("")
                    continue
            else:
                stripped = line.strip()
                if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                    fence = None
                out.append("")
                continue
            if not ("`" in line or "$" in line or "<!--" in line or "%%" in line):
                out.append(line)
                continue
        masked, region = _mask_line(line, region, last, line_end)
        out.append(masked)
    return "\n".join(out)


def _mask_line(line: str, region: str | None, last: dict[str, int], line_end: int) -> tuple[str, str | None]:
    """The line with its code, math and comments blanked, and the closer of a region still open at its end.
    `last`: where the last closer of each region starts in the whole text; `line_end`: where this line ends."""
    parts: list[str] = []
    pos = 0
    unclosed: set[str] = set()     # openers with no closer after them: every later one of the kind is text too
    if region is not None:
        end = line.find(region)
        if end < 0:
            return " " * len(line), region
        pos = end + len(region)
        parts.append(" " * pos)
    while True:
        match = _INLINE.search(line, pos)
        if match is None:
            parts.append(line[pos:])
            return "".join(parts), None
        start, token = match.start(), match.group(0)
        parts.append(line[pos:start])
        closer = _CLOSER.get(token)
        if closer is None:                       # a whole code span or inline math span
            parts.append(" " * len(token))
            pos = match.end()
            continue
        end = -1 if token in unclosed else line.find(closer, match.end())
        if end >= 0:                             # closed on the same line
            pos = end + len(closer)
            parts.append(" " * (pos - start))
            continue
        if last[token] <= line_end:              # no closer anywhere after it: text
            unclosed.add(token)
            parts.append(token)
            pos = match.end()
            continue
        parts.append(" " * (len(line) - start))  # open until a later line
        return "".join(parts), closer
