"""Index notes (Maps of Content, "Start here" pages, link lists): notes whose body is mostly links.

Their text is a list of other notes' titles, so it matches many questions without answering any, and their
links say little about each target. A note counts as an index note when it has at least `min_links` distinct
links and at least `min_link_lines` of its text lines are link items: lines whose words outside the links
(list markers, separators, a short gloss) number at most `max_item_words`. Headings and code do not count.
A note written with the index type in its frontmatter, or tagged with one of `tags`, is one whatever its body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mindnet.vault.budget import checkpoint
from mindnet.vault.links import WIKILINK, mask_code

# [text](target): the text holds no bracket and the target at most one level of parentheses, so a match
# attempt stops at the next bracket or parenthesis. The old `[^\]\n]*` / `[^)\n]+` scanned to the end of
# the line from every "[" or "](" of an unclosed run: quadratic (120,000 "[" froze a server for minutes).
MARKDOWN_LINK = re.compile(r"!?\[[^\[\]\n]*\]\((?:[^()\n]|\([^()\n]*\))+\)")
WORD = re.compile(r"[^\W_]+", re.UNICODE)
HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


@dataclass(frozen=True)
class LinkShape:
    """How much of a body is links: distinct link targets, text lines, and the text lines that are link items."""

    links: int
    lines: int
    link_lines: int

    @property
    def share(self) -> float:
        return self.link_lines / self.lines if self.lines else 0.0


def link_shape(body: str, max_item_words: int = 8) -> LinkShape:
    targets: set[str] = set()
    lines = link_lines = 0
    for no, line in enumerate(mask_code(body, body=True).split("\n")):
        checkpoint(no)
        if not line.strip() or HEADING.match(line):
            continue
        lines += 1
        found = [m.group(2).split("|")[0].split("#")[0].strip().lower() for m in WIKILINK.finditer(line)]
        found += [m.group(0) for m in MARKDOWN_LINK.finditer(line)]
        if not found:
            continue
        targets.update(found)
        rest = MARKDOWN_LINK.sub(" ", WIKILINK.sub(" ", line))
        if len(WORD.findall(rest)) <= max_item_words:
            link_lines += 1
    return LinkShape(links=len(targets), lines=lines, link_lines=link_lines)


def is_index_body(body: str, *, min_links: int, min_link_lines: float, max_item_words: int) -> bool:
    shape = link_shape(body, max_item_words)
    return shape.links >= min_links and shape.share >= min_link_lines
