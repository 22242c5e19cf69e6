"""Known-item questions that read as clues (issue 25, item 8): `--make-queries` masks a note's title in its first
sentence as ``___`` (no deleted words, no title leaked), skips index notes and passes over link-title sentences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers_vault import load_types, write_vault

from mindnet.evaluation.vault_queries import PLACEHOLDER, build_questions
from mindnet.settings import SAMPLE_VAULT, shipped_types

BROT = "# Brot\n\nEin Brot braucht Sauerteig, weil Hefe allein den Roggenteig nicht lockert.\n"
SAUERTEIG = ("# Sauerteig\n\nDer Sauerteig ist eine Mischung aus [[Mehl]] und Wasser, die ein paar Tage gärt. "
             "Mehr dazu unten.\n")
INDEX_LIST = "# Backen\n\n" + "\n".join(f"- [[Rezept {i}]]" for i in range(1, 11)) + "\n"
INDEX_LINE = "# Backen\n\nSiehe " + ", ".join(f"[[Rezept {i}]]" for i in range(1, 11)) + ".\n"


def questions(tmp_path: Path, files: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    built = build_questions(write_vault(tmp_path / "v", files), load_types())
    by_note: dict[str, list[str]] = {}
    for q in built.questions:
        by_note.setdefault(q.gold_paths[0], []).append(q.text)
    return by_note, built.skipped


def test_the_title_is_masked_not_deleted(tmp_path: Path) -> None:
    [text] = questions(tmp_path, {"Brot.md": BROT})[0]["Brot.md"]
    assert text == "Ein ___ braucht Sauerteig, weil Hefe allein den Roggenteig nicht lockert."
    assert "brot" not in text.lower() and "  " not in text and "Ein braucht" not in text


@pytest.mark.parametrize("index", [INDEX_LIST, INDEX_LINE], ids=["list", "line"])
def test_an_index_note_gives_no_question_and_is_counted(tmp_path: Path, index: str) -> None:
    by_note, skipped = questions(tmp_path, {"Backen.md": index, "Sauerteig.md": SAUERTEIG})
    assert list(by_note) == ["Sauerteig.md"]
    assert skipped == {"index notes": 1}


def test_a_normal_note_with_a_link_still_gives_its_clue(tmp_path: Path) -> None:
    by_note, skipped = questions(tmp_path, {"Sauerteig.md": SAUERTEIG})
    assert by_note == {"Sauerteig.md": ["Der ___ ist eine Mischung aus Mehl und Wasser, die ein paar Tage gärt."]}
    assert skipped == {}


def test_a_sentence_of_link_titles_is_passed_over(tmp_path: Path) -> None:
    note = ("# Roggenbrot\n\nSiehe [[Mehl]], [[Wasser]] und [[Salz]] und [[Sauerteig]]. "
            "Dieser Teig ruht über Nacht im Kühlschrank.\n")
    by_note, _ = questions(tmp_path, {"Roggenbrot.md": note})
    assert by_note == {"Roggenbrot.md": ["Dieser Teig ruht über Nacht im Kühlschrank."]}
    only = "# Zutaten\n\nSiehe [[Mehl]], [[Wasser]] und [[Salz]]. Kurz gesagt: gut.\n"
    by_note, skipped = questions(tmp_path / "only", {"Zutaten.md": only, "Sauerteig.md": SAUERTEIG})
    assert (list(by_note), skipped) == (["Sauerteig.md"], {"only link-title sentences": 1})


def test_whole_names_first_function_words_kept_ordinals_end_no_sentence(tmp_path: Path) -> None:
    by_note, _ = questions(tmp_path, {
        "pruefung.md": "# Gedanken zur Kyu-Prüfung\n\nAm Samstag war die Prüfung zum 3. Kyu (Braungurt). Bestanden.",
        "suppe.md": "# Linsensuppe nach Oma\n\nMein Standardessen nach einem langen Trainingstag, wenig Aufwand.",
        "ge.md": "# Graph Expansion\n\nGraph expansion walks the edges of the note graph to add neighbours.",
    })
    assert by_note == {
        "ge.md": ["___ walks the edges of the note ___ to add neighbours."],
        "pruefung.md": ["Am Samstag war die ___ zum 3. ___ (Braungurt)."],
        "suppe.md": ["Mein Standardessen nach einem langen Trainingstag, wenig Aufwand."],
    }


def test_links_tasks_and_tags_read_as_their_text(tmp_path: Path) -> None:
    note = ("# Reranker\n\n- [ ] Test whether a cross-encoder [[rel:depends_on Hybrid Search|hybrid]] ranks "
            "[top hits](https://example.org/top) better #mindnet\n")
    by_note, _ = questions(tmp_path, {"Reranker.md": note})
    assert by_note == {"Reranker.md": ["Test whether a cross-encoder hybrid ranks top hits better"]}


def test_the_sample_vault_asks_clues_and_skips_its_welcome_page() -> None:
    built = build_questions(SAMPLE_VAULT, shipped_types())
    ids = [q.id for q in built.questions]
    assert not any(i.startswith("Willkommen#") for i in ids) and built.skipped == {"index notes": 1}
    clues = {q.id: q.text for q in built.questions if PLACEHOLDER in q.text}
    assert clues["concepts/chunking#q1"].startswith("Beim ___ wird eine Notiz")
    assert len(clues) >= 8
    for text in clues.values():          # no broken joins where a word was deleted, no leaked markup
        assert not re.search(r"\s{2}|\[|\]|\(http|`|#\w", text), text
