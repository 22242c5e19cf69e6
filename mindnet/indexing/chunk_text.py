"""What a chunk's texts are: its id, the text that is embedded and the text its keyword (BM25) vector is built
from, read from a chunk's metadata or its stored payload.

Kept apart from `node_parser` (a LlamaIndex `NodeParser`) so that the import's planning, phase 2 and the CLI
use them without importing LlamaIndex (an unchanged `mindnet ingest` never needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_index.core.schema import BaseNode


def chunk_id(note_id: str, index: int) -> str:
    return f"{note_id}#c{index:02d}"


EMBED_MAX_CHARS = 4000   # beyond what the models read (e5: 512 tokens); a pasted base64 blob costs minutes


# Payload fields `embedding_text` reads (phase 2 reads only these from a stored chunk).
EMBED_FIELDS = ["title", "names", "aliases", "heading_path", "window", "text"]


def embedding_input(node: BaseNode) -> str:
    """What gets embedded for a chunk: its context header (`context_header`) and window (text with overlap),
    capped."""
    return embedding_text(node.metadata, node.get_content())


def known_names(meta: dict[str, Any]) -> list[str]:
    """The names the context header gives a chunk's note, each once (any case): its written name (the first of
    `names`: the frontmatter title, else the first heading) or else its name (the file name, `title`), then its
    aliases. A note is found by its other names through the resolver and mentions; the embedded text keeps the
    header it had when the written name was the note's name (adding the file name or a second heading changed
    11 of the sample vault's 88 texts and moved its figures by up to -0.007 nDCG@10, measured)."""
    written = [str(n).strip() for n in meta.get("names") or [] if str(n).strip()]
    out: list[str] = []
    for candidate in [written[0] if written else str(meta.get("title") or "").strip(),
                      *(str(a).strip() for a in meta.get("aliases") or [])]:
        if candidate and candidate.casefold() not in {n.casefold() for n in out}:
            out.append(candidate)
    return out


def heading_trail(meta: dict[str, Any]) -> str:
    """The headings above the chunk joined by " > ", without a top heading that only repeats the header's name,
    and without the chunk's own heading when its text opens with it (the text shows it already)."""
    names = known_names(meta)
    headings = [str(h).strip() for h in meta.get("heading_path") or [] if str(h).strip()]
    if headings and names and headings[0].casefold() == names[0].casefold():
        headings = headings[1:]
    first = str(meta.get("text") or "").lstrip().split("\n", 1)[0].lstrip("#").strip().casefold()
    if headings and first == headings[-1].casefold():
        headings = headings[:-1]      # the chunk opens with its own heading: the text shows it already
    return " > ".join(headings)


def context_header(meta: dict[str, Any]) -> str:
    """The chunk's place in the vault, put before its text so a chunk deep in a note still says what it is
    about: the note's written name with its aliases in brackets (`known_names`: a name in the other language, an
    abbreviation), then the `heading_trail`. A note without a title, heading or aliases (e.g. a BEIR document
    whose title is its file name) gets its name."""
    names = known_names(meta)
    lines = [f"{names[0]} ({', '.join(names[1:])})" if len(names) > 1 else (names[0] if names else ""),
             heading_trail(meta)]
    return "\n".join(line for line in lines if line)


def embedding_text(meta: dict[str, Any], content: str = "") -> str:
    """`embedding_input` from a chunk's metadata (or its stored payload, which holds the same keys)."""
    body = meta.get("window") or meta.get("text") or content
    return f"{context_header(meta)}\n\n{body}".strip()[:EMBED_MAX_CHARS]


def keyword_text(meta: dict[str, Any], content: str = "") -> str:
    """What the BM25 vector of a chunk is built from: LlamaIndex's text of the node ("title: <title>", a blank
    line, the chunk's text), with the note's aliases and the headings above the chunk added to the title line as
    in the embedding's `context_header`. A note's aliases are the names it is looked up by ("ADR-002", "Local
    First"), so they must match a keyword as they match by meaning. A document with only a title (BEIR) keeps
    exactly the vector it had. The overlap window stays out: a neighbour's words would count twice."""
    body = meta.get("text") or content
    return f"title: {context_header(meta)}\n\n{body}".strip()
