"""Markdown-aware chunking: boundaries, whole code blocks and table rows, heading paths, profiles, overlap."""

from __future__ import annotations

import pytest

from mindnet.indexing.chunker import chunk_body, split_blocks
from mindnet.settings import ChunkProfile, ChunkStrategy


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


SMALL = ChunkProfile(target_words=20, max_words=40, overlap_words=5)


def test_split_blocks_recognises_headings_paragraphs_lists_quotes_tables_and_code() -> None:
    body = (
        "# T\n\npara line\ncontinued\n\n- item\n  more\n- item 2\n\n> quote\n> more\n\n| a | b |\n|---|---|\n"
        "| 1 | 2 |\n\n```\ncode\n\n# not a heading\n```\n"
    )
    assert [(b.kind, b.line) for b in split_blocks(body)] == [
        ("heading", 0),
        ("paragraph", 2),
        ("list", 5),
        ("quote", 9),
        ("table", 12),
        ("code", 16),
    ]


def test_chunk_ends_before_a_heading_once_half_full() -> None:
    body = f"# Top\n\n{words('a', 12)}\n\n## Next\n\n{words('b', 12)}\n"
    texts = [c.text for c, _ in chunk_body(body, SMALL)]
    assert texts == [f"# Top\n\n{words('a', 12)}", f"## Next\n\n{words('b', 12)}"]


def test_chunks_cut_between_paragraphs_not_inside_them() -> None:
    paragraphs = [words(p, 25) for p in "abc"]
    texts = [c.text for c, _ in chunk_body("\n\n".join(paragraphs), SMALL)]
    assert texts == paragraphs


def test_small_paragraphs_are_packed_up_to_the_target_size() -> None:
    paragraphs = [words(p, 15) for p in "abc"]
    texts = [c.text for c, _ in chunk_body("\n\n".join(paragraphs), SMALL)]
    assert texts == [f"{paragraphs[0]}\n\n{paragraphs[1]}", paragraphs[2]]


def test_a_too_long_paragraph_is_cut_between_sentences() -> None:
    sentences = [f"Satz {n} hat genau sieben Wörter hier." for n in range(8)]
    profile = ChunkProfile(target_words=14, max_words=20, overlap_words=0)
    texts = [c.text for c, _ in chunk_body(" ".join(sentences), profile)]
    assert texts == [" ".join(sentences[n : n + 2]) for n in range(0, 8, 2)]


@pytest.mark.parametrize(("fence", "inner"), [("```", "~~~"), ("~~~", "```"), ("````", "```")])
def test_a_fenced_code_block_is_never_split_even_when_longer_than_max(fence: str, inner: str) -> None:
    code = "\n".join(
        [
            f"{fence}python",
            *(f"x{i} = {i}  # words words" for i in range(30)),
            inner,
            "# not a heading",
            fence,
        ]
    )
    body = f"{words('a', 10)}\n\n{code}\n\n{words('b', 30)}"
    texts = [c.text for c, _ in chunk_body(body, SMALL)]
    assert texts == [words("a", 10), code, words("b", 30)]


def test_a_long_table_is_cut_between_rows_and_each_part_repeats_the_header() -> None:
    rows = [f"| r{i} c | d{i} e |" for i in range(6)]
    body = "\n".join(["| h1 | h2 |", "|---|---|", *rows])
    texts = [
        c.text for c, _ in chunk_body(body, ChunkProfile(target_words=14, max_words=20, overlap_words=0))
    ]
    header = "| h1 | h2 |\n|---|---|"
    assert texts == [
        f"{header}\n{rows[0]}\n{rows[1]}",
        f"{header}\n{rows[2]}\n{rows[3]}",
        f"{header}\n{rows[4]}\n{rows[5]}",
    ]


def test_each_chunk_keeps_its_heading_path() -> None:
    body = (
        f"# Top\n\n{words('a', 15)}\n\n## Part\n\n{words('b', 15)}\n\n### Detail\n\n{words('c', 15)}\n\n"
        f"## Other\n\n{words('d', 15)}"
    )
    paths = [c.heading_path for c, _ in chunk_body(body, SMALL)]
    assert paths == [["Top"], ["Top", "Part"], ["Top", "Part", "Detail"], ["Top", "Other"]]


def test_by_heading_opens_a_chunk_at_every_heading_however_small() -> None:
    body = "# A\n\none two\n\n## B\n\nthree\n\n## C\n\nfour"
    profile = ChunkProfile(
        strategy=ChunkStrategy.BY_HEADING, target_words=100, max_words=200, overlap_words=0
    )
    assert [c.text for c, _ in chunk_body(body, profile)] == [
        "# A\n\none two",
        "## B\n\nthree",
        "## C\n\nfour",
    ]


def test_sliding_packs_small_sections_together() -> None:
    body = "# A\n\none two\n\n## B\n\nthree\n\n## C\n\nfour"
    profile = ChunkProfile(strategy=ChunkStrategy.SLIDING, target_words=100, max_words=200, overlap_words=0)
    assert [c.text for c, _ in chunk_body(body, profile)] == [body]


@pytest.mark.parametrize(
    ("profile_name", "chunks"),
    [
        ("short", 12),
        ("medium", 6),
        ("long", 3),
        ("by_heading", 6),
    ],
)
def test_configured_profiles_give_their_chunk_counts(types_config, profile_name: str, chunks: int) -> None:
    body = "\n\n".join(
        f"## Section {s}\n\n" + "\n\n".join(words(f"s{s}p{p}", 50) for p in range(3)) for s in range(6)
    )
    assert len(chunk_body(body, types_config.chunk_profiles[profile_name])) == chunks


def test_window_is_overlap_of_previous_text_plus_text_and_text_has_no_overlap() -> None:
    pieces = chunk_body("\n\n".join(words(p, 25) for p in "ab"), SMALL)
    (first, first_window), (second, second_window) = pieces
    assert (first.text, first_window) == (words("a", 25), words("a", 25))
    assert second.text == words("b", 25)
    assert second_window == "a20 a21 a22 a23 a24\n\n" + words("b", 25)


def test_empty_body_gives_no_chunks() -> None:
    assert chunk_body("\n\n  \n", SMALL) == []


def test_trailing_heading_without_text_joins_the_last_chunk() -> None:
    texts = [c.text for c, _ in chunk_body(f"{words('a', 5)}\n\n## Empty end", SMALL)]
    assert texts == [f"{words('a', 5)}\n\n## Empty end"]


def test_a_run_on_paragraph_without_sentence_ends_is_cut_between_words() -> None:
    texts = [c.text for c, _ in chunk_body(words("a", 50), SMALL)]
    assert texts == [" ".join(f"a{i}" for i in range(n, min(n + 20, 50))) for n in (0, 20, 40)]
