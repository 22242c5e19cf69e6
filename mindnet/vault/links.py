r"""Link syntax in note bodies: one link model for wikilinks, embeds and Markdown links, plus inline typed
relations, edge callouts and #tags.

    [[Note]]  [[Note|shown]]  [[Note#Heading]]  [[Note#^block-id]]  ![[Note]]   -> references
    [[#Heading]]  [text](#Heading)                              -> references inside this note
    [text](Note.md)  [text](../x/Some%20Note.md#Setup)  [t](<a b.md>)  [t][ref]  ![alt](Note.md)
                                                                 -> references (mindnet.vault.mdlinks)
    [[folder/Note\|shown]]                                       the escaped pipe Obsidian writes inside tables
    ![[diagram.png]]  [[paper.pdf]]  ![x](img.png)               -> attachment (a file, not a note)
    [[rel:depends_on Note]]                                      -> depends_on
    > [!edge] depends_on: [[A]] [B](b.md)                        -> depends_on to A and B (any number of targets)
    [t](https://example.org)  <https://x.org>  https://x.org    -> external URLs: counted, never note links

Rule ids: `explicit:wikilink`, `explicit:markdown`, `explicit:embed` (both embed syntaxes), `inline:rel`,
`callout:edge`, `attachment:link`, `attachment:embed`. Links inside code spans, fenced code, math and comments
are not read (`mindnet.vault.masking`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mindnet.vault.budget import checkpoint
from mindnet.vault.masking import FENCE, mask_code
from mindnet.vault.mdlinks import MarkdownLink, blank, definitions, find_links, unparsed_link

__all__ = ["ATTACHMENT_EXTENSIONS", "CALLOUT_KIND", "CALLOUT_START", "FENCE", "INLINE_CODE", "REL_PREFIX", "TAG",
           "WIKILINK", "LinkRef", "LinkScan", "extract_links", "extract_tags", "is_attachment", "mask_code",
           "read_links", "strip_links"]

WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
REL_PREFIX = re.compile(r"^rel:\s*([A-Za-z_][\w-]*)\s+(.+)$", re.IGNORECASE)
CALLOUT_START = re.compile(r"^\s*>\s*\[!edge\][+-]?\s*(.*)$", re.IGNORECASE)
CALLOUT_KIND = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(.*)$")
INLINE_CODE = re.compile(r"`[^`\n]*`")
# a tag starts after whitespace or line start, is not a heading marker and not only digits
TAG = re.compile(r"(?:(?<=\s)|^)#([^\W\d][\w/-]*|\d+[^\W\d][\w/-]*)", re.UNICODE | re.MULTILINE)
MAX_PROBLEMS = 20     # link problems reported per note; the rest are counted in one more line


@dataclass(frozen=True)
class LinkRef:
    """One link found in text. `kind` is the edge kind, `rule_id` the rule that produced it, `syntax` how it was
    written (wikilink, markdown or embed)."""

    target: str        # the note as written: file name, path, title or alias ("" for a link into this note)
    kind: str
    rule_id: str
    anchor: str | None = None   # after '#': a heading ("Setup", nested "A#B") or a block ("^id")
    line: int = 0      # 0-based line within the scanned text
    syntax: str = "wikilink"

    @property
    def heading(self) -> str | None:
        return None if self.anchor is None or self.anchor.startswith("^") else self.anchor

    @property
    def block(self) -> str | None:
        return self.anchor[1:] if self.anchor is not None and self.anchor.startswith("^") else None


@dataclass
class LinkScan:
    """Everything link-like of a text: its links in reading order, the external URLs (each once, in order of
    first use; `url_count` counts every occurrence) and what could not be read, as (0-based line, message)."""

    refs: list[LinkRef] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    url_count: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)
    problems_dropped: int = 0

    def problem(self, line: int, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((line, message))
        else:
            self.problems_dropped += 1


ESCAPED_OR_PLAIN_PIPE = re.compile(r"\\?\|")
# files Obsidian links or embeds that are not notes (any other extension is read as part of a note's name)
ATTACHMENT_EXTENSIONS = frozenset(
    "png jpg jpeg gif bmp svg webp avif tif tiff ico heic pdf mp3 wav ogg m4a flac aac webm mp4 mov mkv avi ogv "
    "3gp csv tsv xls xlsx doc docx ppt pptx odt ods odp epub zip txt json canvas drawio base".split())


def is_attachment(target: str) -> bool:
    """A link to a file that is not a note: its last path segment ends in a known file extension."""
    name = target.strip().rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in ATTACHMENT_EXTENSIONS


def _split_target(inner: str) -> tuple[str, str | None]:
    target = ESCAPED_OR_PLAIN_PIPE.split(inner, maxsplit=1)[0]
    anchor = None
    if "#" in target:
        target, anchor = target.split("#", 1)
        anchor = anchor.strip() or None
    return target.strip(), anchor


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def extract_links(text: str) -> list[LinkRef]:
    """All links of `text` in reading order. Callout links are typed by the callout and not counted twice."""
    return read_links(text).refs


def read_links(text: str, *, body: bool = False) -> LinkScan:
    """The links, URLs and unreadable links of `text` (see `LinkScan`). Reference-style links resolve against
    the definitions anywhere in `text`. `body`: a note's body, read under the per-note budget."""
    scan = LinkScan()
    lines = mask_code(text, body=body).split("\n")
    refs = definitions(lines) if "]:" in text else {}
    seen_urls: dict[str, None] = {}
    callout_kind: str | None = None
    in_callout = False
    for no, line in enumerate(lines):
        if body:
            checkpoint(no)
        start = CALLOUT_START.match(line) if ">" in line else None
        if start:
            in_callout, callout_kind = True, None
            rest = start.group(1)
            offset = start.start(1)
        elif in_callout and line.lstrip().startswith(">"):
            offset = len(line) - len(line.lstrip()) + 1
            rest = line[offset:]
        else:
            in_callout, rest, offset = False, line, 0
        if "[" not in rest and "://" not in rest and "<" not in rest:
            continue
        typed: str | None = None
        if in_callout:
            m = CALLOUT_KIND.match(rest)
            if m:
                callout_kind, rest, offset = m.group(1).lower(), m.group(2), offset + m.start(2)
            typed = callout_kind
            if typed is None:
                rest, offset = line, 0
        found = _wikilinks(rest, no, typed)
        plain = WIKILINK.sub(_blank, rest) if found else rest
        if "[[" in plain:
            scan.problem(no, f"unclosed link at column {offset + plain.index('[[') + 1} (fix: close it with "
                             f"']]' or write '\\[[' for brackets that are not a link)")
        md, urls = find_links(plain, refs) if ("[" in plain or "://" in plain or "<" in plain) else ([], [])
        found += [(link.start, ref) for link in md if (ref := _markdown_ref(link, no, typed, scan)) is not None]
        for link in md:
            if link.url is not None:
                urls.append(link.url)
        bad = unparsed_link(plain, md)
        if bad >= 0:
            scan.problem(no, f"a Markdown link that does not parse at column {offset + bad + 1} (fix: close it "
                             f"with ')', write spaces in its destination as %20, or put it in <...>)")
        found.sort(key=lambda pair: pair[0])
        scan.refs += [ref for _, ref in found]
        scan.url_count += len(urls)
        for url in urls:
            seen_urls.setdefault(url)
    scan.urls = list(seen_urls)
    return scan


def _wikilinks(text: str, no: int, typed: str | None) -> list[tuple[int, LinkRef]]:
    out: list[tuple[int, LinkRef]] = []
    for link in WIKILINK.finditer(text):
        inner = link.group(2).strip()
        embed = link.group(1) == "!"
        if typed:
            target, anchor = _split_target(inner)
            if target or anchor:
                out.append((link.start(), LinkRef(target, typed, "callout:edge", anchor, no, _syntax(embed))))
            continue
        rel = REL_PREFIX.match(inner)
        if rel:
            target, anchor = _split_target(rel.group(2))
            if target or anchor:
                out.append((link.start(), LinkRef(target, rel.group(1).lower(), "inline:rel", anchor, no)))
            continue
        target, anchor = _split_target(inner)
        if not target and not anchor:
            continue
        if is_attachment(target):
            out.append((link.start(), LinkRef(target, "attachment", "attachment:embed" if embed else
                                              "attachment:link", anchor, no, _syntax(embed))))
            continue
        rule = "explicit:embed" if embed else "explicit:wikilink"
        out.append((link.start(), LinkRef(target, "references", rule, anchor, no, _syntax(embed))))
    return out


def _syntax(embed: bool, markdown: bool = False) -> str:
    return "embed" if embed else "markdown" if markdown else "wikilink"


def _markdown_ref(link: MarkdownLink, no: int, typed: str | None, scan: LinkScan) -> LinkRef | None:
    if link.problem is not None:
        scan.problem(no, link.problem)
    if link.url is not None or link.outside or (not link.target and not link.anchor):
        return None
    syntax = _syntax(link.embed, markdown=True)
    if typed:
        return LinkRef(link.target, typed, "callout:edge", link.anchor, no, syntax)
    if is_attachment(link.target):
        return LinkRef(link.target, "attachment", "attachment:embed" if link.embed else "attachment:link",
                       link.anchor, no, syntax)
    return LinkRef(link.target, "references", "explicit:embed" if link.embed else "explicit:markdown",
                   link.anchor, no, syntax)


def extract_tags(text: str, *, body: bool = False, masked: str | None = None) -> list[str]:
    """The #tags of `text` in order of first use, each once (a dict: a list lookup per tag was quadratic).
    `masked`: `mask_code(text)` when the caller has it already."""
    tags: dict[str, None] = {}
    for m in TAG.finditer(masked if masked is not None else mask_code(text, body=body)):
        tag = m.group(1).rstrip("/-")
        if tag:
            tags.setdefault(tag)
    return list(tags)


def strip_links(text: str) -> str:
    """Text with every [[...]] and inline [text](destination) replaced by spaces of equal length (offsets stay
    valid)."""
    text = WIKILINK.sub(_blank, text)
    if "](" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "](" in line:
            lines[i] = blank(line, find_links(line, {})[0])
    return "\n".join(lines)
