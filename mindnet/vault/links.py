r"""Link syntax in note bodies: wikilinks, embeds, inline typed relations, edge callouts and #tags.

    [[Note]]  [[Note|shown]]  [[Note#Heading]]  ![[Note]]       -> references (embed: rule explicit:embed)
    [[folder/Note\|shown]]                                       the escaped pipe Obsidian writes inside tables
    ![[diagram.png]]  [[paper.pdf]]                              -> attachment (a file, not a note)
    [[rel:depends_on Note]]                                      -> depends_on
    > [!edge] depends_on: [[A]] [[B]]                            -> depends_on to A and B (any number of targets)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mindnet.vault.budget import checkpoint

WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
REL_PREFIX = re.compile(r"^rel:\s*([A-Za-z_][\w-]*)\s+(.+)$", re.IGNORECASE)
CALLOUT_START = re.compile(r"^\s*>\s*\[!edge\][+-]?\s*(.*)$", re.IGNORECASE)
CALLOUT_KIND = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(.*)$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"`[^`\n]*`")
# a tag starts after whitespace or line start, is not a heading marker and not only digits
TAG = re.compile(r"(?:(?<=\s)|^)#([^\W\d][\w/-]*|\d+[^\W\d][\w/-]*)", re.UNICODE | re.MULTILINE)


@dataclass(frozen=True)
class LinkRef:
    """One link found in text. `kind` is the edge kind, `rule_id` the rule that produced it."""

    target: str        # the note as written: title, alias, file name or path
    kind: str
    rule_id: str
    heading: str | None = None
    line: int = 0      # 0-based line within the scanned text


ESCAPED_OR_PLAIN_PIPE = re.compile(r"\\?\|")
# files Obsidian links or embeds that are not notes (any other extension is read as part of a note's name)
ATTACHMENT_EXTENSIONS = frozenset(
    "png jpg jpeg gif bmp svg webp avif tif tiff ico heic pdf mp3 wav ogg m4a flac aac webm mp4 mov mkv avi ogv "
    "3gp csv tsv xls xlsx doc docx ppt pptx odt ods odp epub zip txt json canvas drawio".split())


def is_attachment(target: str) -> bool:
    """A link to a file that is not a note: its last path segment ends in a known file extension."""
    name = target.strip().rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in ATTACHMENT_EXTENSIONS


def _split_target(inner: str) -> tuple[str, str | None]:
    target = ESCAPED_OR_PLAIN_PIPE.split(inner, maxsplit=1)[0]
    heading = None
    if "#" in target:
        target, heading = target.split("#", 1)
        heading = heading.strip() or None
    return target.strip(), heading


def mask_code(text: str, *, body: bool = False) -> str:
    """Blank out fenced code blocks and inline code so links and tags inside them are not read. `body`: the
    text is a note's body, read under the import's per-note budget (`mindnet.vault.budget`)."""
    out: list[str] = []
    marker: str | None = None   # the open fence (``` or ~~~, possibly longer)
    for no, line in enumerate(text.split("\n")):
        if body:
            checkpoint(no)
        fence = FENCE.match(line)
        if marker is None and fence:
            marker = fence.group(1)
            out.append("")
            continue
        if marker is not None:
            stripped = line.strip()
            if stripped.startswith(marker) and set(stripped) == {marker[0]}:
                marker = None
            out.append("")
            continue
        out.append(INLINE_CODE.sub(_blank, line) if "`" in line else line)
    return "\n".join(out)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def extract_links(text: str) -> list[LinkRef]:
    """All links of `text` in reading order. Callout links are typed by the callout and not counted twice."""
    refs: list[LinkRef] = []
    lines = mask_code(text).split("\n")
    callout_kind: str | None = None
    in_callout = False
    for no, line in enumerate(lines):
        start = CALLOUT_START.match(line)
        if start:
            in_callout, callout_kind = True, None
            rest = start.group(1)
        elif in_callout and line.lstrip().startswith(">"):
            rest = line.lstrip()[1:]
        else:
            in_callout = False
            rest = None
        if in_callout and rest is not None:
            m = CALLOUT_KIND.match(rest)
            if m:
                callout_kind, rest = m.group(1).lower(), m.group(2)
            if callout_kind:
                for link in WIKILINK.finditer(rest):
                    target, heading = _split_target(link.group(2))
                    if target:
                        refs.append(LinkRef(target, callout_kind, "callout:edge", heading, no))
                continue
        for link in WIKILINK.finditer(line):
            inner = link.group(2).strip()
            rel = REL_PREFIX.match(inner)
            if rel:
                target, heading = _split_target(rel.group(2))
                if target:
                    refs.append(LinkRef(target, rel.group(1).lower(), "inline:rel", heading, no))
                continue
            target, heading = _split_target(inner)
            if not target:
                continue
            if is_attachment(target):
                refs.append(LinkRef(target, "attachment", "attachment:embed" if link.group(1) else
                                    "attachment:link", heading, no))
                continue
            rule = "explicit:embed" if link.group(1) else "explicit:wikilink"
            refs.append(LinkRef(target, "references", rule, heading, no))
    return refs


def extract_tags(text: str, *, body: bool = False) -> list[str]:
    """The #tags of `text` in order of first use, each once (a dict: a list lookup per tag was quadratic)."""
    tags: dict[str, None] = {}
    for m in TAG.finditer(mask_code(text, body=body)):
        tag = m.group(1).rstrip("/-")
        if tag:
            tags.setdefault(tag)
    return list(tags)


def strip_links(text: str) -> str:
    """Text with every [[...]] replaced by spaces of equal length (offsets stay valid)."""
    return WIKILINK.sub(lambda m: " " * len(m.group(0)), text)
