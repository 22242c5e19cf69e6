"""Regexes on user text stay linear: inputs that made the old patterns cubic or quadratic (minutes) now parse
at once, with the same result as on a harmless input. Sizes are chosen so that the old patterns would run for
minutes; `fails_after` only turns such a hang into a failure."""

from __future__ import annotations

import pytest
from helpers_guard import fails_after

from mindnet.chat import draft_parse
from mindnet.indexing.chunker import split_blocks
from mindnet.indexing.sparse import tokenize
from mindnet.vault.headings import first_h1, heading_text, parse_heading
from mindnet.vault.note import parse_note

SPACES = " " * 20_000        # `# Titel` + 4,000 spaces + `x` took 84 s with the old heading patterns


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Titel", (1, "Titel")),
        ("### Titel ###", (3, "Titel")),
        ("## Titel #  ", (2, "Titel")),
        ("# C#", (1, "C#")),                  # a closing run must follow whitespace
        ("#\tTab", (1, "Tab")),
        ("# ", (1, "")),
        ("# ##", (1, "")),
        ("#", None),
        ("#Titel", None),
        ("####### seven", None),
        (" # indented", None),
    ],
)
def test_parse_heading(line, expected):
    assert parse_heading(line) == expected


def test_first_h1_skips_empty_headings_and_never_crosses_lines():
    assert first_h1("#\nnot a title\n#   \n## Sub\n# Real one #\n") == "Real one"
    assert first_h1("text\n## only a sub heading") is None


def test_a_heading_with_a_long_run_of_spaces_is_parsed_at_once():
    with fails_after(60):
        assert parse_heading("# Titel" + SPACES + "x") == (1, "Titel" + SPACES + "x")
        assert heading_text("Titel" + SPACES + "#" * 20_000 + "x") == "Titel" + SPACES + "#" * 20_000 + "x"
        blocks = split_blocks("# Titel" + SPACES + "x\n\n## B" + SPACES + "#\n\ntext")
    assert [(b.kind, b.heading_path) for b in blocks] == [
        ("heading", ["Titel" + SPACES + "x"]), ("heading", ["Titel" + SPACES + "x", "B"]),
        ("paragraph", ["Titel" + SPACES + "x", "B"])]


def test_a_note_title_from_a_pathological_h1_is_read_at_once(types_config):
    raw = ("# Titel" + SPACES + "x\n\n" + "#" + SPACES + "#" * 5000 + "y\n").encode()
    with fails_after(60):
        note = parse_note(raw, "n.md", types_config)
    assert (note.title, note.names) == ("n", ["Titel" + SPACES + "x"])


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("<ab<ab\u2039ab", {"ab"}),        # unclosed tags: 20 KB of `<a<a‹a` took 5.5 s (quadratic)
        ("](](", set()),                 # unclosed link targets
    ],
)
def test_the_bm25_tokenizer_is_linear_on_unclosed_tags_and_link_targets(unit, expected):
    text = "Qdrant " + unit * 40_000 + " Graph"    # about 300 KB: hours for a quadratic scan
    with fails_after(60):
        terms = tokenize(text)
    assert set(terms) == {"qdrant", "graph"} | expected


def test_the_bm25_tokenizer_still_drops_closed_tags_and_link_targets():
    assert tokenize("<b>Qdrant</b> [Doku](https://x.example/a) <a href='y'>Link</a>") == \
        tokenize("Qdrant Doku Link")


@pytest.mark.parametrize(
    "line",
    [
        "```" + " " * 100_000 + "`",           # fence: spaces, info and the rest re-split (20 K: 3 s)
        "```" + ":l" * 50_000 + "`",
        "a" + "\t" * 100_000 + "b",            # key line: the lazy key re-scans the blanks (20 K: 1.5 s)
        " " * 100_000 + ":",                   # (20 K: 7 s)
    ],
)
def test_sanitizer_line_patterns_are_linear_on_lines_that_do_not_match(line):
    with fails_after(60):
        assert draft_parse._FENCE.match(line) is None
        assert draft_parse._KEY_LINE.match(line) is None


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [("title: Hallo", "title", "Hallo"), ("- tags:   ", "tags", ""), ("tags:", "tags", None),
     ("  key  : v  ", "key", "v  "), ("http://x", None, None), ("a:b", None, None)],
)
def test_sanitizer_key_lines_keep_their_meaning(line, key, value):
    m = draft_parse._KEY_LINE.match(line)
    assert (m["key"].rstrip(), m["value"]) == (key, value) if key else m is None


def test_a_draft_with_a_pathological_heading_is_sanitised_at_once():
    text = "---\ntitle: T\n---\n# T" + SPACES + "x\n\n## Nächste Schritte" + SPACES + "#\n"
    with fails_after(60):
        headings = draft_parse._headings(text.split("\n"))
    assert [(level, title) for _, level, title in headings] == [(1, "T" + SPACES + "x"), (2, "Nächste Schritte")]


def test_the_regex_benchmark_prints_old_beside_new_for_each_input(capsys):
    from benchmarks import bench_regex
    assert bench_regex.main(["--scale", "0.02"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split()[0] for row in rows] == ["input", "chunker", "note", "BM25", "BM25", "draft", "draft",
                                                "interview"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("```markdown\n---\ntitle: x\n---\n```", True), ("``` yaml \n  ---  \n", True), ("~~~\n\n---", True),
     ("```python\n---", False), ("```" + " " * 100_000 + "x\n---", False)],   # 20 K blanks took 1 s before
)
def test_the_interview_note_detector_is_linear_and_keeps_its_meaning(reply, expected):
    from mindnet.chat.interview import contains_note
    with fails_after(60):
        assert contains_note(reply) is expected


@pytest.mark.parametrize("unit", ["[", "[x](", "[[", "![[a|"])
def test_the_cli_excerpt_reads_runs_of_open_brackets_at_once(unit):
    """`mindnet query` shows a passage as plain text; 400,000 characters of unclosed links took minutes with
    patterns that scanned past the next '[' (quadratic), and are read at once now."""
    from mindnet.cli_render import plain_text

    with fails_after(60):
        text = plain_text(unit * (400_000 // len(unit)) + " Ende")
    assert text.endswith("Ende")
    assert plain_text("See [[Qdrant|the DB]] and [text](http://x)") == "See the DB and text"


def test_long_texts_are_tokenized_in_pieces_with_the_same_words():
    """A 2 MB note is cleaned and split a piece of lines at a time (no single regex call holds the interpreter
    lock for long); the words are exactly those of the whole text at once."""
    from mindnet.indexing import sparse

    line = "Die [Suche](https://x.y/a(b)) mit <b>BM25</b> und e-mail-Adressen: www.example.org ü-ß 42\n"
    text = line * 30_000 + "](" * 5_000 + "\nEnde"
    assert len(text) > 4 * sparse.PIECE_CHARS
    assert sparse._clean_words(text) == sparse._words(sparse._clean(text))
    assert sparse.tokenize(text)[-1] == "end"
