"""Note text as literal Markdown for the chat UI: escaping, code spans, and images turned into plain links.

Note text is data, never markup: titles, paths and reasons are escaped (HTML entities and Markdown punctuation),
a code span or block is fenced longer than any backtick run inside it, so `<script>` in a note shows up as text.
The answer itself is Markdown, but its images become plain links (`images_as_links`): nothing in it loads from
another machine unless the user clicks (the page's Content-Security-Policy blocks it anyway, see
mindnet/security.py). Pure functions, no Chainlit; `mindnet.ui.render` builds the messages from them.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+!|~>:$])")   # ':' starts a directive, '$' math
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BACKTICKS = re.compile(r"`+")


def escape(text: object) -> str:
    """`text` as literal inline Markdown: no HTML, no emphasis, no links."""
    out = "".join(_HTML.get(ch, ch) for ch in str(text if text is not None else ""))
    # '>' is already an entity; escape the remaining Markdown punctuation with backslashes
    return _MD_PUNCT.sub(r"\\\1", out).replace("\n", " ")


def code_span(text: object) -> str:
    """`text` as one inline code span, whatever backticks it contains."""
    value = " ".join(str(text if text is not None else "").split())
    longest = max((len(m) for m in _BACKTICKS.findall(value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


# an image's "![" after an even number of backslashes (an odd number escapes the "!")
_IMAGE_START = re.compile(r"(?<!\\)((?:\\\\)*)!\[(\]?)")
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_RUN = re.compile(r"(`+)")
_commonmark = MarkdownIt("commonmark")


def images_as_links(text: str) -> str:
    """Markdown images (`![alt](url)`, `![alt][ref]`) as plain links `[image: alt](url)`: the browser fetches
    nothing until the user clicks one. Fenced code blocks and code spans stay as written; should a CommonMark
    parser still find an image (an odd nesting of code and brackets), every "![" becomes a link, code included."""
    if "![" not in text:
        return text
    out, fence = [], ""
    for line in text.splitlines(keepends=True):
        m = _FENCE_LINE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = ""
            out.append(line)
        elif m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
            fence = m.group(1)
            out.append(line)
        else:
            out.append(_links_outside_code_spans(line))
    result = "".join(out)
    return _IMAGE_START.sub(_as_link, result) if _has_image(result) else result


def _as_link(m: re.Match[str]) -> str:
    return f"{m.group(1)}[image]" if m.group(2) else f"{m.group(1)}[image: "


def _links_outside_code_spans(line: str) -> str:
    parts = _CODE_RUN.split(line)      # text, run, text, run, ...: a run closed by one as long is a code span
    out, i = [], 0
    while i < len(parts):
        if i % 2:
            close = next((j for j in range(i + 2, len(parts), 2) if parts[j] == parts[i]), None)
            if close is not None:
                out.append("".join(parts[i:close + 1]))
                i = close + 1
                continue
            out.append(parts[i])
        else:
            out.append(_IMAGE_START.sub(_as_link, parts[i]))
        i += 1
    return "".join(out)


def _has_image(text: str) -> bool:
    stack = list(_commonmark.parse(text))
    while stack:
        token = stack.pop()
        if token.type == "image":
            return True
        stack.extend(token.children or ())
    return False


def code_block(text: str, info: str = "text") -> str:
    """A fenced block that shows `text` verbatim, whatever backticks it contains."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


_BARE_URL = re.compile(r"(?<!`)\bhttps?://[^\s`)]*[^\s`).,;:!?]")   # not the sentence's last mark


def inline_markdown(text: object) -> str:
    """`text` escaped like `escape`, but its `code spans` stay code (notices name commands that way). A bare
    address becomes code too: the Markdown renderer would make it a live link (a notice names Ollama's URL to
    check, not a page to open)."""
    out, last = [], 0
    s = _BARE_URL.sub(lambda m: f"`{m.group(0)}`", str(text if text is not None else ""))
    for m in _CODE_SPAN.finditer(s):
        out.append(escape(s[last:m.start()]))
        code = m.group(2).replace("`", "")
        out.append(f"`{code}`")
        last = m.end()
    out.append(escape(s[last:]))
    return "".join(out)
