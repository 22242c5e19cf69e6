"""`mindnet suggest`: a note, a draft on stdin, and --apply (diff first, backup, one callout block, re-import)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers_vault import TYPES_YAML, write_vault

from mindnet.analysis.apply import BACKUP_DIR, edge_block
from mindnet.analysis.models import LinkSuggestion, Relation
from mindnet.cli import main
from mindnet.store.engine import Where
from mindnet.store.factory import open_folder
from mindnet.vault.links import extract_links

VAULT = {
    "concepts/qdrant.md": "---\nid: qdrant\n---\n# Qdrant\n\nQdrant speichert Vektoren und Payload.\n",
    "concepts/bm25.md": "---\nid: bm25\n---\n# BM25\n\nBM25 gewichtet Terme im Korpus.\n",
    "projects/suche.md": "---\nid: suche\n---\n# Suche\n\nDie Suche hängt ab von Qdrant und nutzt BM25.\n",
}


@pytest.fixture
def env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": tmp_path / "qdrant",
                       "CACHE_DIR": tmp_path / "cache", "COLLECTION_PREFIX": "t", "TYPES_CONFIG": TYPES_YAML,
                       "QDRANT_URL": "", "VAULT_ROOT": tmp_path / "vault"}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    vault = write_vault(tmp_path / "vault", VAULT)
    assert main(["ingest"]) == 0
    return vault


def edges_of(tmp_path: Path, note_id: str) -> set[tuple[str, str, str]]:
    store = open_folder(tmp_path / "qdrant", "t")
    try:
        records = list(store.scroll("edges", Where.field("note_id", note_id)))
    finally:
        store.close()
    return {(r.payload["target_id"], r.payload["kind"], r.payload["rule_id"]) for r in records}


def test_suggest_json_for_a_note(env: Path, capsys) -> None:
    assert main(["suggest", "projects/suche.md", "--json", "--no-llm"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = {s["note_id"]: s["relation"]["kind"] for s in data["links"]}
    assert kinds == {"qdrant": "depends_on", "bm25": "depends_on"}


def test_suggest_reads_a_draft_from_stdin(env: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Das widerspricht BM25."))
    assert main(["suggest", "-", "--json", "--no-llm"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["kind"] == "draft"
    assert (data["links"][0]["note_id"], data["links"][0]["relation"]["kind"]) == ("bm25", "contradicts")


def test_apply_shows_the_diff_keeps_a_backup_writes_one_block_and_reimports(env: Path, tmp_path: Path,
                                                                           capsys) -> None:
    note = env / "projects/suche.md"
    original = note.read_text(encoding="utf-8")
    assert main(["suggest", "projects/suche.md", "--apply", "--yes", "--no-llm"]) == 0
    out = capsys.readouterr().out
    block = "> [!edge] depends_on: [[bm25]] [[qdrant]]"     # linked by file name, as Obsidian links them
    assert "+" + block in out and out.index("+" + block) < out.index("wrote 2 edges")
    assert "--- a/projects/suche.md" in out
    assert note.read_text(encoding="utf-8") == original.rstrip("\n") + "\n\n" + block + "\n"
    backups = list((env / BACKUP_DIR).rglob("*.bak"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == original
    edges = edges_of(tmp_path, "suche")
    assert {("qdrant", "depends_on", "callout:edge"), ("bm25", "depends_on", "callout:edge")} <= edges


def test_apply_with_pick_writes_only_the_picked(env: Path, capsys) -> None:
    assert main(["suggest", "projects/suche.md", "--apply", "--yes", "--pick", "2", "--no-llm"]) == 0
    text = (env / "projects/suche.md").read_text(encoding="utf-8")
    assert text.count("[!edge]") == 1 and text.rstrip().endswith("]]") and text.count("[[") == 1


def test_apply_without_confirmation_writes_nothing(env: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))     # not a terminal: nobody can say yes
    note = env / "projects/suche.md"
    original = note.read_bytes()
    assert main(["suggest", "projects/suche.md", "--apply", "--no-llm"]) == 1
    captured = capsys.readouterr()
    assert "+> [!edge]" in captured.out and "not written" in captured.err
    assert note.read_bytes() == original and not (env / BACKUP_DIR).exists()


def test_apply_refuses_a_draft(env: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Qdrant"))
    assert main(["suggest", "-", "--apply", "--yes"]) == 2
    assert "a draft is never written" in " ".join(capsys.readouterr().err.split())


def test_unknown_note_is_an_error(env: Path, capsys) -> None:
    assert main(["suggest", "nowhere.md"]) == 2
    assert "no note with id or path 'nowhere.md'" in " ".join(capsys.readouterr().err.split())


def test_pick_out_of_range_is_an_error(env: Path, capsys) -> None:
    assert main(["suggest", "projects/suche.md", "--apply", "--yes", "--pick", "9", "--no-llm"]) == 2
    assert "--pick [9] out of range" in " ".join(capsys.readouterr().err.split())


def _link(title: str, kind: str) -> LinkSuggestion:
    return LinkSuggestion(note_id=title, title=title, path=f"{title}.md", type="concept", link_text=title,
                          confidence=0.5, reason="r", sources=["related"],
                          relation=Relation(kind=kind, confidence=0.5, reason="r", rule="fallback"), callout="")


def test_the_edge_block_reads_back_as_the_same_typed_edges() -> None:
    block = edge_block([_link("A", "depends_on"), _link("B", "supports"), _link("C", "depends_on")])
    assert block == "> [!edge] depends_on: [[A]] [[C]]\n> supports: [[B]]"
    assert [(r.target, r.kind, r.rule_id) for r in extract_links("text\n\n" + block)] == [
        ("A", "depends_on", "callout:edge"), ("C", "depends_on", "callout:edge"), ("B", "supports", "callout:edge")]


def _spanned(title: str, kind: str, text: str, surface: str):
    from mindnet.analysis.models import Span
    start = text.index(surface)
    link = _link(title, kind)
    return link.model_copy(update={"mentions": [Span(start=start, end=start + len(surface), line=1,
                                                         surface=surface)],
                                   "callout": f"> [!edge] {kind}: [[{title}]]"})


def test_insert_at_the_mention_links_the_words_as_written() -> None:
    from mindnet.analysis.apply import insert_link
    text = "Wir nutzen die alpha-Suche hier."
    assert insert_link(text, _spanned("A", "depends_on", text, "alpha")) == "Wir nutzen die [[A|alpha]]-Suche hier."
    assert insert_link("x A y", _spanned("A", "depends_on", "x A y", "A")) == "x [[A]] y"


def test_insert_at_the_end_adds_a_callout_line_or_joins_the_block() -> None:
    from mindnet.analysis.apply import insert_link
    once = insert_link("Text.\n", _spanned("A", "depends_on", "Text.", "Text"), at="end")
    assert once == "Text.\n\n> [!edge] depends_on: [[A]]\n"
    twice = insert_link(once, _spanned("B", "supports", once, "Text"), at="end")
    assert twice == "Text.\n\n> [!edge] depends_on: [[A]]\n> [!edge] supports: [[B]]\n"
    assert [(r.target, r.kind) for r in extract_links(twice)] == [("A", "depends_on"), ("B", "supports")]


def test_insert_refuses_a_changed_text() -> None:
    from mindnet.analysis.apply import insert_link
    link = _spanned("A", "depends_on", "alpha", "alpha")
    with pytest.raises(ValueError, match="changed since"):
        insert_link("omega", link)


def test_a_new_file_of_the_vault_not_imported_yet_is_analysed_at_its_place(env: Path, capsys) -> None:
    (env / "tasks").mkdir()
    (env / "tasks" / "neu.md").write_text("# Neu\n\nQdrant aufsetzen.\n", encoding="utf-8")
    assert main(["suggest", str(env / "tasks" / "neu.md"), "--json", "--no-llm"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["kind"] == "draft" and data["source"]["path"] == "tasks/neu.md"
    assert data["type"]["value"] == "task" and data["links"][0]["note_id"] == "qdrant"


def test_suggest_without_an_index_creates_no_files(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Reading commands never create an index folder or a cache (issue 25, item 3): it names the folder."""
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": tmp_path / "qdrant",
                       "CACHE_DIR": tmp_path / "cache", "QDRANT_URL": "", "VAULT_ROOT": tmp_path / "vault"}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    write_vault(tmp_path / "vault", VAULT)
    assert main(["suggest", "concepts/qdrant.md", "--no-llm"]) == 2
    assert str(tmp_path / "qdrant") in capsys.readouterr().err.replace("\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vault"]
