r"""Markdown links as Obsidian reads them (CommonMark destinations, percent-encoded):

    [text](Note.md)  [text](../folder/Some%20Note.md#Section)  [text](<folder/Note with spaces.md>)
    [text](Note.md "a title")  ![alt](Note.md) (an embed)  [text](#Heading) (this note)
    [text][ref] / [ref][] / [ref]   with a definition   [ref]: folder/Note.md "title"
    [text](https://example.org)  <https://example.org>  https://example.org    -> external URLs, not notes

Link text holds no brackets (`[a [b] c](x)` is not read) and a destination at most one level of parentheses,
so every pattern is linear in the line: a match attempt stops at the next bracket, parenthesis or space.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

# `[text]` (no brackets inside); what follows decides: `(` an inline link, `[` a reference, else a shortcut
BRACKET = re.compile(r"(!?)\[([^\[\]\n]*)\]")
# an inline destination after `](`: <...> or a run without spaces (balanced parentheses one level deep), an
# optional title, then `)`; possessive throughout, so a failed attempt never re-splits a run
_DEST = re.compile(r"[ \t]*+(?:<([^<>\n]*+)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*+\))*+))"
                   r"(?:[ \t]++(?:\"[^\"\n]*+\"|'[^'\n]*+'|\([^()\n]*+\)))?+[ \t]*+\)")
_LABEL = re.compile(r"\[([^\[\]\n]*)\]")
DEFINITION = re.compile(r"^ {0,3}\[([^\[\]\n]+)\]:[ \t]*+(?:<([^<>\n]*+)>|(\S++))"
                        r"(?:[ \t]++(?:\"[^\"\n]*+\"|'[^'\n]*+'|\([^()\n]*+\)))?+[ \t]*+$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*+)>")
BARE_URL = re.compile(r"(?<![\w/])(?:https?|ftp)://[^\s<>()\[\]\"'`]++")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class MarkdownLink:
    """One Markdown link on a line: where it is, what it points to (decoded), and why it could not be read."""

    start: int
    end: int
    embed: bool
    target: str              # the path or name, percent-decoded ("" for a link into this note)
    anchor: str | None       # after '#', percent-decoded
    url: str | None = None   # an external URL (not a note)
    problem: str | None = None
    outside: bool = False    # a file outside the vault (an absolute file path or file: URL): never followed


def label_key(label: str) -> str:
    """Reference labels match case-insensitively with whitespace collapsed (CommonMark)."""
    return _SPACE.sub(" ", label).strip().casefold()


def definitions(lines: list[str]) -> dict[str, str]:
    """Reference definitions `[label]: destination` of masked lines, the first of each label (CommonMark);
    footnotes (`[^1]: ...`) are not links."""
    found: dict[str, str] = {}
    for line in lines:
        if "]:" not in line:
            continue
        m = DEFINITION.match(line)
        if m is None or m.group(1).lstrip().startswith("^"):
            continue
        key = label_key(m.group(1))
        if key and key not in found:
            found[key] = m.group(2) if m.group(2) is not None else m.group(3)
    return found


def decode_destination(raw: str, *, embed: bool, start: int = 0, end: int = 0) -> MarkdownLink:
    """A destination as written -> what it points to: a URL, a file outside the vault, or a note path and anchor
    (backslash escapes removed, percent-decoded; a bad percent-encoding is read as written, with a problem)."""
    dest = raw.strip()
    if DRIVE.match(dest) or dest.lower().startswith("file:"):
        return MarkdownLink(start, end, embed, dest, None, outside=True,
                            problem=f"links to '{_short(dest)}', a file outside the vault; not followed "
                                    f"(fix: move it into the vault and link it by its path there)")
    if SCHEME.match(dest):
        return MarkdownLink(start, end, embed, dest, None, url=dest)
    path, _, anchor = dest.partition("#")
    problem = None
    decoded = []
    for part in (path, anchor):
        text, bad = _percent_decode(_ESCAPE.sub(r"\1", part))
        decoded.append(unicodedata.normalize("NFC", text))
        if bad and problem is None:
            problem = (f"link '{_short(dest)}' has a bad percent-encoding ({bad}); read as written (fix: write a "
                       f"space as %20 and a literal % as %25, or put the destination in <...>)")
    return MarkdownLink(start, end, embed, decoded[0], decoded[1] if "#" in dest else None, problem=problem)


def _percent_decode(text: str) -> tuple[str, str | None]:
    """(decoded text, what was wrong or None). `%` not followed by two hex digits, or bytes that are not UTF-8,
    leave the text as written."""
    if "%" not in text:
        return text, None
    if _BAD_PERCENT.search(text):
        return text, "a '%' not followed by two hex digits"
    try:
        return unquote(text, errors="strict"), None
    except UnicodeDecodeError:
        return text, "the encoded bytes are not UTF-8"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def find_links(line: str, refs: dict[str, str]) -> tuple[list[MarkdownLink], list[str]]:
    """The Markdown links of one masked line (wikilinks already blanked) in order, and the external URLs written
    as autolinks or bare URLs outside them."""
    links: list[MarkdownLink] = []
    pos = 0
    while True:
        m = BRACKET.search(line, pos)
        if m is None:
            break
        embed, text = m.group(1) == "!", m.group(2)
        after = m.end()
        if line.startswith("(", after):
            dest = _DEST.match(line, after + 1)
            if dest is not None:
                raw = dest.group(1) if dest.group(1) is not None else dest.group(2)
                if raw.strip():
                    links.append(decode_destination(raw, embed=embed, start=m.start(), end=dest.end()))
                pos = dest.end()
                continue
            pos = after
            continue
        label = text
        end = after
        second = _LABEL.match(line, after) if line.startswith("[", after) else None
        if second is not None:
            label, end = (second.group(1) or text), second.end()
        elif line.startswith(":", after) and m.start() == len(line) - len(line.lstrip()):
            pos = after      # a definition line, not a link
            continue
        raw = refs.get(label_key(label)) if refs and label.strip() and not label.lstrip().startswith("^") else None
        if raw is not None:
            links.append(decode_destination(raw, embed=embed, start=m.start(), end=end))
            pos = end
        else:
            pos = after if second is None else end
    return links, _urls_outside(line, links)


def blank(line: str, links: list[MarkdownLink]) -> str:
    """The line with the given links replaced by spaces (offsets stay valid)."""
    if not links:
        return line
    parts, pos = [], 0
    for link in links:
        parts += [line[pos:link.start], " " * (link.end - link.start)]
        pos = link.end
    return "".join(parts) + line[pos:]


def _urls_outside(line: str, links: list[MarkdownLink]) -> list[str]:
    if "://" not in line and "<" not in line:
        return []
    line = blank(line, links)
    urls = [m.group(1) for m in AUTOLINK.finditer(line)]
    rest = AUTOLINK.sub(" ", line) if urls else line
    return urls + [m.group(0).rstrip(".,;:!?") for m in BARE_URL.finditer(rest)]


def unparsed_link(line: str, links: list[MarkdownLink]) -> int:
    """Where a `[text](` that did not become a link starts on the line (-1: none): an unclosed destination, or
    one with a space outside <...>."""
    if "](" not in line:
        return -1
    rest = blank(line, links)
    at = rest.find("](")
    return -1 if at < 0 else rest.rfind("[", 0, at)
