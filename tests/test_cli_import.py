"""`mindnet ingest`, `mindnet dry-run` and `mindnet check` through the command line entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_vault import TYPES_YAML, write_vault

from mindnet.cli import main
from mindnet.store.collections import point_id
from mindnet.store.factory import open_folder

VAULT = {
    "a.md": "---\nid: a\n---\n# A\n\nsee [[B]] and [[Missing]]",
    "b.md": "---\nid: b\n---\n# B\n\nback to [[A]]",
}


@pytest.fixture
def env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in {
        "EMBEDDING": "ollama",
        "OLLAMA_URL": fake_ollama.url,
        "QDRANT_PATH": tmp_path / "qdrant",
        "CACHE_DIR": tmp_path / "cache",
        "COLLECTION_PREFIX": "t",
        "TYPES_CONFIG": TYPES_YAML,
        "QDRANT_URL": "",
    }.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    return write_vault(tmp_path / "vault", VAULT)


def test_ingest_json_prints_the_report(env, capsys) -> None:
    assert main(["ingest", str(env), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["notes"], data["new"], data["chunks"], data["unresolved_links"]) == (
        2,
        2,
        2,
        [{"note": "a.md", "link": "Missing"}],
    )


@pytest.mark.parametrize(
    ("files", "strict", "code"),
    [
        ({}, True, 0),  # clean vault
        ({"bad.md": "---\nx: [\n---\n"}, False, 0),  # a skipped note without --strict
        ({"bad.md": "---\nx: [\n---\n"}, True, 1),  # ... with --strict
        ({"r.md": "---\ntype: recipe\n---\nx"}, True, 1),  # a warning with --strict
    ],
)
def test_strict_turns_reported_problems_into_exit_code_1(env, files, strict: bool, code: int) -> None:
    write_vault(env, files)
    assert main(["ingest", str(env), *(["--strict"] if strict else [])]) == code


def test_ingest_prints_each_problem_with_file_line_and_fix(env, capsys) -> None:
    write_vault(env, {"bad.md": "---\nx: [\n---\n"})
    main(["ingest", str(env)])
    out = capsys.readouterr().out
    assert "warning: bad.md:2: frontmatter is not valid YAML: " in out
    assert "(fix: check quotes and indentation of that line)" in out


def test_dry_run_prints_payloads_without_qdrant_or_embeddings(env, tmp_path, fake_ollama, capsys) -> None:
    assert main(["dry-run", str(env)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["note_id"] for n in data["notes"]] == ["a", "b"]
    assert [c["chunk_id"] for c in data["chunks"]] == ["a#c01", "b#c01"]
    assert sorted(
        (e["source_id"], e["kind"], e["target_id"]) for e in data["edges"] if e["kind"] == "references"
    ) == [("a#c01", "references", "b"), ("a#c01", "references", "missing"), ("b#c01", "references", "a")]
    assert (data["issues"], (tmp_path / "qdrant").exists(), fake_ollama.recorded()) == ([], False, [])


def test_check_passes_on_a_fresh_import_and_lists_unresolved_links(env, capsys) -> None:
    main(["ingest", str(env)])
    capsys.readouterr()
    assert main(["check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["notes"], data["chunks"]) == (True, 2, 2)
    # one line per unresolved link, as in the import report (the type's default edge repeating it is not listed)
    assert data["unresolved"] == [{"note_id": "a", "target": "missing", "kind": "references", "text": "Missing"}]


def test_check_fails_on_an_index_broken_on_purpose(env, tmp_path, capsys) -> None:
    main(["ingest", str(env)])
    store = open_folder(tmp_path / "qdrant", "t")
    store.delete("notes", [point_id("b")])  # b's chunk and edges lose their note
    store.close()
    capsys.readouterr()
    assert main(["check", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["orphan_chunks"]) == (False, ["b#c01"])
    assert sorted((d["source_id"], d["target_id"], d["kind"]) for d in data["dangling_edges"]) == [
        ("a#c01", "b", "references"),     # carries the type default related_to (stored once)
        ("b#c01", "b", "belongs_to"),
    ]


def test_check_without_an_index_names_the_folder_and_creates_nothing(env, tmp_path, capsys) -> None:
    assert main(["check"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"no index at {tmp_path / 'qdrant'}" in err and "mindnet ingest" in err
    assert not (tmp_path / "qdrant").exists()


def test_dimension_change_exits_2_and_says_to_run_full(env, fake_ollama, capsys) -> None:
    main(["ingest", str(env)])
    fake_ollama.dim = 16
    write_vault(env, {"a.md": "---\nid: a\n---\n# A\n\nchanged"})
    assert main(["ingest", str(env)]) == 2
    assert "run `mindnet ingest --full`" in capsys.readouterr().err
    assert main(["ingest", str(env), "--full"]) == 0


def test_check_links_lists_what_every_link_resolved_to_and_by_which_rule(env, capsys) -> None:
    write_vault(env, {"sub/c.md": "---\nid: c\n---\n# C\n\n[[../a]], [b](../b.md#B), [[AI]] and [[Nope]]\n",
                      "k.md": "---\nid: k\naliases: [AI]\n---\n# K\n\nk\n", "empty.md": ""})
    assert main(["ingest", str(env)]) == 0
    capsys.readouterr()
    assert main(["check", "--links", "--json"]) == 0        # an empty note is a note, not a problem
    data = json.loads(capsys.readouterr().out)
    rows = {n["note"]: [(x["text"], x["anchor"], x["by"], x["target"], x["section"]) for x in n["links"]]
            for n in data["links"]}
    assert rows["sub/c.md"] == [("../a", None, "path", "a.md", None), ("../b.md", "B", "path", "b.md", "B"),
                                ("AI", None, "alias", "k.md", None), ("Nope", None, "unresolved", "nope", None)]
    assert (data["ok"], data["notes"], data["chunks"]) == (True, 5, 4)     # the empty note: no chunk
    main(["check", "--links"])
    out = capsys.readouterr().out
    assert "  ../b.md#B -> b.md, section 'B' (by path; markdown link)" in out
    assert "  AI -> k.md (through an alias: mindnet goes further, Obsidian leaves it unresolved; " \
           "explicit:wikilink)" in out
    assert "  Nope -> unresolved 'nope' (explicit:wikilink)" in out


def test_ingest_without_a_terminal_prints_progress_lines(env, fake_ollama, monkeypatch, capsys) -> None:
    """Piped or logged, an import says how far it is (issue 25, item 5), not silence until the report."""
    import mindnet.commands.index
    monkeypatch.setattr(mindnet.commands.index, "PROGRESS_EVERY_S", 0.05)
    fake_ollama.latency = 0.5          # each embedding request takes a while: the import runs for several lines
    assert main(["ingest", str(env)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("importing ")]
    assert lines, "no progress line"
    assert any("texts embedded" in line for line in lines) or any("notes" in line for line in lines)


def test_the_sample_vaults_planted_problems_are_said_to_be_planted(tmp_path, fake_ollama) -> None:
    """Issue 25, item 6: the two warnings and the unresolved link of the sample vault are on purpose."""
    from helpers_vault import fake_settings

    from mindnet.service import Mindnet
    from mindnet.settings import SAMPLE_VAULT
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, vault_root=SAMPLE_VAULT))
    try:
        report = app.ingest().as_dict()
    finally:
        app.close()
    planted = [n for n in report["notices"] if "on purpose" in n]
    assert len(planted) == 1
    for name in ("Linsensuppe.md", "broken-frontmatter.md", "Zettelkasten Methode"):
        assert name in planted[0]
    assert {u["target"] for u in report["unresolved_top"]} == {"Zettelkasten Methode"}
    assert len(report["warnings"]) == 2
