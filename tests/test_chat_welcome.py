"""The welcome page's starters and three lines (pure functions) and the notes they come from."""

from __future__ import annotations

from mindnet.chat.welcome import starter_questions, welcome_text

NOTES = [
    {"title": "Qdrant", "type": "concept", "links": 3},
    {"title": "Entscheidung: Qdrant statt Chroma", "type": "decision", "links": 2},
    {"title": "mindnet", "type": "project", "links": 9},
    {"title": "Lena Hoffmann", "type": "person", "links": 1},
    {"title": "BM25", "type": "concept", "links": 5},
    {"title": "  ", "type": "concept", "links": 50},
]


def test_starters_take_one_note_per_type_most_linked_first() -> None:
    assert starter_questions(NOTES) == [
        ("Qdrant statt Chroma", "Warum Qdrant statt Chroma?"),
        ("BM25", "Was ist BM25?"),
        ("mindnet", "Wie steht es um mindnet?"),
        ("Lena Hoffmann", "Wer ist Lena Hoffmann?"),
    ]


def test_starters_fill_up_from_the_same_type_and_shorten_long_labels() -> None:
    notes = [{"title": "A" * 60, "type": "concept"}, {"title": "B", "type": "concept"}]
    assert starter_questions(notes) == [("A" * 39 + "…", f"Was ist {'A' * 60}?"), ("B", "Was ist B?")]
    assert starter_questions([]) == []


def test_welcome_says_in_three_lines_what_happens_and_offers_the_import_when_empty() -> None:
    full = welcome_text(vault="/v", notes=12).splitlines()
    empty = welcome_text(vault="/v", notes=0).splitlines()
    assert len(full) == len(empty) == 3
    assert "12 notes of your vault `/v`" in full[0] and "[1], [2]" in full[1] and "nothing leaves" in full[2]
    assert "**Import now**" in empty[0]


def test_indexed_notes_lists_titles_types_and_links(make_app, tmp_path) -> None:
    from helpers_vault import write_vault
    app = make_app()
    assert app.indexed_notes() == []
    app.ingest(write_vault(tmp_path / "vault", {"a.md": "# A\n\nsiehe [[B]]\n", "b.md": "# B\n\ntext\n"}))
    notes = sorted(app.indexed_notes(), key=lambda n: n["title"])
    assert [(n["title"], n["names"], n["links"] > 0) for n in notes] == [("a", ["A"], True), ("b", ["B"], True)]


def test_a_starter_names_the_note_by_its_written_title_when_its_file_name_is_a_slug() -> None:
    notes = [{"title": "qdrant-statt-chroma", "names": ["Entscheidung: Qdrant statt Chroma"], "type": "decision"},
             {"title": "lena-hoffmann", "names": [], "type": "person"}]
    assert starter_questions(notes) == [("Qdrant statt Chroma", "Warum Qdrant statt Chroma?"),
                                        ("lena-hoffmann", "Wer ist lena-hoffmann?")]
