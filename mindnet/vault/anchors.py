"""What a link's `#anchor` can point to in a note: its headings and its block ids (`^id`), by body line.

A heading anchor matches a heading whatever its case and punctuation: Obsidian writes a link to the heading
"Step 1: Setup" as `[[Note#Step 1 Setup]]` (it cannot hold `:`, `#`, `|`, `^`, `%`, `[` or `]`), and a Markdown
link from another tool as `#step-1-setup`; all three have the key "step 1 setup". Nested anchors (`A#B`) name a
heading under another. A block id (`^id`: Latin letters, digits and dashes) ends a line after a space, or stands
on its own line after the block it names (a table, a quote).

Headings and blocks inside code, math or comments are not anchors (the caller passes the masked body), and
neither is a heading holding a template placeholder. A note keeps at most `MAX_ANCHORS` of each.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from mindnet.vault.budget import checkpoint
from mindnet.vault.headings import has_placeholder, parse_heading

MAX_ANCHORS = 2000
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
_BLOCK_ID = re.compile(r"[A-Za-z0-9-]+")


def heading_key(text: str) -> str:
    """Case and punctuation folded: 'Step 1: Setup', 'step-1-setup' and 'Step 1 Setup' are 'step 1 setup'."""
    return " ".join(_NOT_WORD.sub(" ", unicodedata.normalize("NFC", text).casefold()).split())


def block_key(block: str) -> str:
    return block.strip().casefold()


def block_id(line: str) -> str | None:
    """The block id that ends `line` (`text ^id`, or `^id` alone), or None."""
    text = line.rstrip()
    at = text.rfind("^")
    if at < 0 or (at > 0 and not text[at - 1].isspace()):
        return None
    ident = text[at + 1:]
    return ident if ident and _BLOCK_ID.fullmatch(ident) else None


@dataclass(frozen=True)
class Anchor:
    key: str            # "h:<heading key>", "h:<parent key>/<heading key>" or "b:<block id>"
    line: int           # 0-based body line of the heading, or of the block the id names


def note_anchors(body: str, masked: str) -> list[Anchor]:
    """The anchors of a body (`masked`: the body with code, math and comments blanked, same lines), headings and
    blocks in body order, each heading under its own key and under its parent's."""
    anchors: list[Anchor] = []
    headings = blocks = 0
    path: list[tuple[int, str]] = []
    lines = body.split("\n")
    previous = -1            # the last non-blank line (a block id on its own line names the block above it)
    for no, line in enumerate(masked.split("\n")):
        checkpoint(no)
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            heading = parse_heading(lines[no] if no < len(lines) else line)
            if heading is not None and parse_heading(line) is not None and headings < MAX_ANCHORS:
                level, text = heading
                key = heading_key(text)
                path = [(lv, k) for lv, k in path if lv < level]
                if key and not has_placeholder(text):
                    headings += 1
                    anchors.append(Anchor(f"h:{key}", no))
                    if path:
                        anchors.append(Anchor(f"h:{path[-1][1]}/{key}", no))
                path.append((level, key))
                previous = no
                continue
        if "^" in line and blocks < MAX_ANCHORS:
            ident = block_id(line)
            if ident is not None:
                blocks += 1
                alone = line.strip() == f"^{ident}"
                anchors.append(Anchor(f"b:{block_key(ident)}", previous if alone and previous >= 0 else no))
        previous = no
    return anchors


def anchor_keys(anchor: str) -> tuple[list[str], str | None]:
    """The keys an anchor as written is looked up by, most specific first, and why it cannot match any (None: it
    can). `^id` is a block; `A#B` is heading B under A (then B anywhere)."""
    if anchor.startswith("^"):
        key = block_key(anchor[1:])
        if not key:
            return [], f"block anchor '#{anchor}' has no id"
        return [f"b:{key}"], None
    parts = [heading_key(p) for p in anchor.split("#")]
    parts = [p for p in parts if p]
    if not parts:
        return [], f"heading anchor '#{anchor[:60]}' has no letters or digits"
    keys = [f"h:{parts[-2]}/{parts[-1]}"] if len(parts) > 1 else []
    return keys + [f"h:{parts[-1]}"], None
