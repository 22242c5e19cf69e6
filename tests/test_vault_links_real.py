"""Links that real vaults write: escaped pipes (tables, publishing plugins), attachments, and the import's closing
report of unresolved targets (the 10 most frequent and a count; --verbose lists all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_vault import TYPES_YAML, write_vault

from mindnet.cli import main
from mindnet.vault.links import extract_links, is_attachment


@pytest.mark.parametrize(("text", "target", "heading"), [
    (r"[[02 - RESOURCES/Notes/DNS\|DNS]]", "02 - RESOURCES/Notes/DNS", None),
    (r"| a | [[folder/Note\|Alias]] | b |", "folder/Note", None),
    (r"[[Note#Setup\|the setup]]", "Note", "Setup"),
    ("[[Note|plain alias]]", "Note", None),
])
def test_escaped_and_plain_pipes_split_the_alias_off(text: str, target: str, heading: str | None) -> None:
    [ref] = extract_links(text)
    assert (ref.target, ref.heading, ref.kind) == (target, heading, "references")


@pytest.mark.parametrize(("target", "attachment"), [
    ("diagram.png", True), ("assets/Icon.SVG", True), ("paper.pdf", True), ("clip.mp4", True),
    ("Note", False), ("v1.2 release", False), ("folder/Note.md", False), ("Dr. Who", False),
])
def test_attachments_are_known_file_extensions(target: str, attachment: bool) -> None:
    assert is_attachment(target) is attachment


def test_attachment_links_and_embeds_are_attachments_not_references() -> None:
    refs = extract_links("![[diagram.png]] and [[file.pdf]] and ![[icon.svg|32]] and [[Note]]")
    assert [(r.target, r.kind, r.rule_id) for r in refs] == [
        ("diagram.png", "attachment", "attachment:embed"), ("file.pdf", "attachment", "attachment:link"),
        ("icon.svg", "attachment", "attachment:embed"), ("Note", "references", "explicit:wikilink")]


VAULT = {
    "02 - RESOURCES/Notes/DNS.md": "---\nid: dns\n---\n# DNS\n\nname resolution",
    "index.md": "---\nid: index\n---\n# Index\n\n| topic | note |\n|---|---|\n"
                "| net | [[02 - RESOURCES/Notes/DNS\\|DNS]] |\n\nAlso [[02 - RESOURCES/Notes/DNS\\|the DNS note]].\n\n"
                "![[diagram.png]] [[scan.pdf]] ![[logo.svg]]\n\n"
                + "".join(f"[[Gone {i % 12}]] " for i in range(40)),
}


@pytest.fixture
def env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": tmp_path / "qdrant",
                       "CACHE_DIR": tmp_path / "cache", "COLLECTION_PREFIX": "t", "TYPES_CONFIG": TYPES_YAML,
                       "QDRANT_URL": ""}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    return write_vault(tmp_path / "vault", VAULT)


def test_escaped_pipe_links_resolve_and_attachments_are_counted_not_unresolved(env, capsys) -> None:
    assert main(["ingest", str(env), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["edges_by_kind"]["references"] == 1 + 12          # both DNS links (one edge) + 12 missing targets
    assert data["attachments"] == 3
    assert data["unresolved_count"] == 12                           # one edge per distinct missing target
    assert all(not u["link"].endswith(("\\", ".png", ".pdf", ".svg")) for u in data["unresolved_links"])
    assert len(data["unresolved_top"]) == 10


def test_check_does_not_count_attachments_as_unresolved(env, capsys) -> None:
    main(["ingest", str(env), "--json"])
    capsys.readouterr()
    main(["check", "--json"])
    data = json.loads(capsys.readouterr().out)
    # counted by the normalised target (one missing note however its links write it), shown as written
    assert sorted({u["target"] for u in data["unresolved"]}) == sorted(f"gone {i}" for i in range(12))
    assert sorted({u["text"] for u in data["unresolved"]}) == sorted(f"Gone {i}" for i in range(12))


def test_closing_report_lists_the_10_most_frequent_targets_and_verbose_lists_all(env, capsys) -> None:
    write_vault(env, {"more.md": "# More\n\n[[Gone 3]] [[Gone 3]] [[Gone 5]]\n\n[[Gone 3]]"})
    main(["ingest", str(env)])
    out = capsys.readouterr().out
    assert "14 to 12 targets" in out
    lines = [line.strip() for line in out.splitlines() if " x [[" in line]
    assert lines[:2] == ["2 x [[Gone 3]]", "2 x [[Gone 5]]"]
    assert len(lines) == 10
    main(["ingest", str(env), "--full", "--verbose"])
    out = capsys.readouterr().out
    assert sum(line.startswith("unresolved link ") for line in out.splitlines()) == 14
