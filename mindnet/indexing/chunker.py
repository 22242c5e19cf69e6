"""Markdown-aware chunking: split a note body into blocks, then pack blocks into chunks by profile.

Blocks are headings, paragraphs, lists, block quotes/callouts, tables and fenced code. A chunk never cuts a
code block or a table row; it prefers to end before a heading, then between blocks, and only cuts a too-long
paragraph between sentences. Each chunk keeps the heading path it sits under.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mindnet.settings import ChunkProfile, ChunkStrategy
from mindnet.vault.budget import checkpoint
from mindnet.vault.headings import has_placeholder, parse_heading
from mindnet.vault.masking import mask_code

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[\"'»„(\[]?[A-ZÄÖÜ0-9])")


@dataclass
class Block:
    kind: str                 # heading | paragraph | code | table | quote | list
    text: str
    heading_path: list[str]   # headings above this block (for a heading: including itself)
    line: int                 # 0-based line in the body
    level: int = 0            # heading level

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass
class Chunk:
    text: str
    heading_path: list[str]
    start_line: int
    blocks: list[Block] = field(default_factory=list)

    @property
    def words(self) -> int:
        return len(self.text.split())


def closes_fence(line: str, marker: str) -> bool:
    """A fence closes with the same character, at least as many times, and nothing else on the line."""
    s = line.strip()
    return s.startswith(marker) and set(s) == {marker[0]}


def _kind_of(line: str) -> str:
    s = line.lstrip()
    if s.startswith("|"):
        return "table"
    if s.startswith(">"):
        return "quote"
    if re.match(r"^([-*+]|\d+[.)])\s", s):
        return "list"
    return "paragraph"


def split_blocks(body: str) -> list[Block]:
    """The blocks of a body. A `#` line is a heading only outside code, math and comments (as Obsidian reads it)
    and when it holds no template placeholder (`# {{title}}` is a template's line)."""
    lines = body.split("\n")
    masked = mask_code(body, body=True).split("\n") if "#" in body else lines

    def heading_at(i: int) -> tuple[int, str] | None:
        found = parse_heading(lines[i]) if lines[i].startswith("#") else None
        if found is None or (masked is not lines and parse_heading(masked[i]) is None) or has_placeholder(found[1]):
            return None
        return found

    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        checkpoint(i)
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = heading_at(i)
        fence = FENCE.match(line)
        if heading:
            level, title = heading
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            blocks.append(Block("heading", line.strip(), [t for _, t in path], i, level))
            i += 1
        elif fence:
            marker, start = fence.group(1), i
            i += 1
            while i < len(lines) and not closes_fence(lines[i], marker):
                i += 1
            i = min(i + 1, len(lines))  # include the closing fence (an unclosed one runs to the end)
            blocks.append(Block("code", "\n".join(lines[start:i]), [t for _, t in path], start))
        else:
            kind, start = _kind_of(line), i
            i += 1
            while i < len(lines) and lines[i].strip() and heading_at(i) is None and not FENCE.match(lines[i]):
                nxt = _kind_of(lines[i])
                # a list may continue with indented lines; tables and quotes only with their own kind
                if nxt != kind and not (kind in ("list", "paragraph") and nxt == "paragraph"):
                    break
                i += 1
            blocks.append(Block(kind, "\n".join(lines[start:i]).rstrip(), [t for _, t in path], start))
    return blocks


def _cut_words(text: str, max_words: int, target_words: int) -> list[str]:
    tokens = text.split()
    if len(tokens) <= max_words:
        return [text]
    return [" ".join(tokens[i:i + target_words]) for i in range(0, len(tokens), target_words)]


def _split_long(block: Block, max_words: int, target_words: int) -> list[Block]:
    """Cut a block that alone exceeds max_words: tables/lists between lines, prose between sentences.
    Code blocks are never cut. Each piece keeps the line it starts on."""
    if block.words <= max_words or block.kind in ("code", "heading"):
        return [block]
    if block.kind in ("table", "list", "quote"):
        units = block.text.split("\n")
        header = units[:2] if block.kind == "table" and len(units) > 2 else []
        units = units[len(header):]
        lines = [block.line + len(header) + n for n in range(len(units))]
        joiner = "\n"
    else:
        # between sentences; a run-on sentence longer than max_words is cut between words
        sentences = SENTENCE_END.split(block.text)
        units = [piece for sentence in sentences for piece in _cut_words(sentence, max_words, target_words)]
        lines, cursor = [], 0
        for unit in units:     # where each unit starts in the block (its first word, searched forward)
            words = unit.split()
            found = block.text.find(words[0], cursor) if words else -1
            cursor = found if found >= 0 else cursor
            lines.append(block.line + block.text.count("\n", 0, cursor))
        header, joiner = [], " "
    # pieces of at most target_words words (counted as they grow: a piece's words are its units' words)
    pieces: list[tuple[int, list[str]]] = [(lines[0] if lines else block.line, [])]
    size = 0
    for unit, line in zip(units, lines, strict=True):
        words = len(unit.split())
        if pieces[-1][1] and size + words > target_words:
            pieces.append((line, []))
            size = 0
        pieces[-1][1].append(unit)
        size += words
    out = []
    for n, (line, piece) in enumerate(pieces):
        text = joiner.join(header + piece)
        if text.strip():
            out.append(Block(block.kind, text, block.heading_path, block.line if n == 0 else line))
    return out


def pack_chunks(blocks: list[Block], profile: ChunkProfile) -> list[Chunk]:
    units: list[Block] = []
    for b in blocks:
        units.extend(_split_long(b, profile.max_words, profile.target_words))

    chunks: list[Chunk] = []
    # the open chunk, its word count and how many of its blocks are not headings, kept as it grows: counting
    # them again per block was quadratic in a note of headings only (which never flushes)
    current: list[Block] = []
    size = content = 0

    def add(block: Block) -> None:
        nonlocal size, content
        current.append(block)
        size += block.words
        content += block.kind != "heading"

    def flush() -> None:
        nonlocal size, content
        if not content:
            return
        # headings at the end belong to what follows them, so they open the next chunk
        cut = len(current)
        while current[cut - 1].kind == "heading":
            cut -= 1
        body, carry = current[:cut], current[cut:]
        first = next(b for b in body if b.kind != "heading")
        path = body[0].heading_path if body[0].kind == "heading" else first.heading_path
        chunks.append(Chunk("\n\n".join(b.text for b in body), list(path), body[0].line, list(body)))
        current.clear()
        size = content = 0
        for b in carry:
            add(b)

    for block in units:
        if content:
            if block.kind == "heading":
                # by_heading: every heading opens a chunk; sliding: only once the chunk is half full
                if profile.strategy is ChunkStrategy.BY_HEADING or size >= profile.target_words // 2:
                    flush()
            elif size + block.words > profile.max_words or (
                    size >= profile.target_words and profile.strategy is ChunkStrategy.SLIDING):
                flush()
        add(block)
    flush()
    if current and chunks:  # trailing headings without content join the last chunk
        last = chunks[-1]
        last.text += "\n\n" + "\n\n".join(b.text for b in current)
    elif current:
        chunks.append(Chunk("\n\n".join(b.text for b in current), current[-1].heading_path, current[0].line,
                            list(current)))
    return chunks


def overlap_prefix(previous_text: str, overlap_words: int) -> str:
    if overlap_words <= 0 or not previous_text:
        return ""
    return " ".join(previous_text.split()[-overlap_words:])


def chunk_body(body: str, profile: ChunkProfile) -> list[tuple[Chunk, str]]:
    """Chunks with their embedding window (overlap from the previous chunk + the chunk's own text)."""
    chunks = pack_chunks(split_blocks(body), profile)
    out = []
    for n, chunk in enumerate(chunks):
        prefix = overlap_prefix(chunks[n - 1].text, profile.overlap_words) if n else ""
        out.append((chunk, f"{prefix}\n\n{chunk.text}" if prefix else chunk.text))
    return out
