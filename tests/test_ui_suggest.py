"""The chat's Save & Analyze rendering: the editor panel's payload and the /suggest message (pure functions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_vault import write_vault

from mindnet.ui.suggest import panel_payload, suggestions_markdown

VAULT = {
    "concepts/qdrant.md": "---\nid: qdrant\n---\n# Qdrant\n\nQdrant speichert Vektoren und Payload.\n",
    "concepts/bm25.md": "---\nid: bm25\n---\n# BM25\n\nBM25 gewichtet Terme im Korpus.\n",
    "projects/suche.md": "---\nid: suche\n---\n# Suche\n\nDie Suche hängt ab von Qdrant und nutzt BM25.\n",
}


@pytest.fixture
def app(make_app, tmp_path: Path):
    write_vault(tmp_path / "vault", VAULT)
    mindnet = make_app()
    mindnet.ingest()
    return mindnet


def test_the_panel_gets_each_link_with_its_mention_and_callout(app) -> None:
    text = "Das hängt ab von Qdrant."
    data = panel_payload(app.analyze(text=text, llm=False))
    first = data["links"][0]
    # a link by the note's name, its file name, as Obsidian writes it
    assert (first["title"], first["kind"], first["link_text"]) == ("qdrant", "depends_on", "qdrant")
    assert text[first["mention"]["start"]:first["mention"]["end"]] == first["mention"]["surface"] == "Qdrant"
    assert first["callout"] == "> [!edge] depends_on: [[qdrant]]"


def test_the_suggest_message_lists_links_and_says_apply_shows_the_change_first(app) -> None:
    text = suggestions_markdown(app.analyze(note="projects/suche.md", llm=False))
    assert text.startswith("**Suggestions for suche** (projects/suche.md)")
    assert "1. `depends_on` → **bm25**" in text and "2. `depends_on` → **qdrant**" in text
    assert "**Apply** shows the change to the note first" in text and "--apply" not in text


def test_a_reason_shared_by_several_suggestions_is_said_once_with_their_numbers(app) -> None:
    result = app.analyze(note="projects/suche.md", llm=False)
    first = result.links[0]
    same = [first.model_copy(update={"note_id": f"n{i}", "title": f"note {i}", "reason": "the same reason",
                                     "relation": first.relation.model_copy(update={"reason": "kind reason"})})
            for i in range(4)]
    text = suggestions_markdown(result.model_copy(update={"links": [*same, same[0]]}))   # one target twice
    assert text.count("the same reason") == 1 and text.count("kind reason") == 1
    assert "- 1-4: the same reason" in text and "- 1-4: `depends_on`: kind reason" in text
    assert "5. " not in text and "4. `depends_on` → **note 3** (" in text


def test_the_suggest_message_says_when_there_is_nothing(app, tmp_path: Path) -> None:
    text = suggestions_markdown(app.analyze(note="concepts/bm25.md", llm=False, limit=1).model_copy(
        update={"links": []}))
    assert "No links to suggest" in text and "--apply" not in text
