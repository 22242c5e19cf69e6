"""Hostile or broken input: each bad file becomes one report line, the rest imports, nothing escapes the vault."""

from __future__ import annotations

import json
import logging
import os
import sys
import unicodedata
from pathlib import Path

import pytest
from helpers_guard import fails_after
from helpers_process import drop_permission_override, run_child
from helpers_store import payloads
from helpers_vault import TYPES_YAML, fake_settings, write_vault

from mindnet.errors import VaultError
from mindnet.indexing.integrity import check_index
from mindnet.service import Mindnet
from mindnet.vault.note import read_note
from mindnet.vault.scan import scan_vault


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("---\ntitle: feb\ncreated: !!timestamp 2024-02-30\n---\nbody\n", 1, "frontmatter has an impossible value"),
        ("---\na: &a [*a]\n---\nbody\n", 2, "YAML aliases (*name) are not supported"),
        ("---\nid: \"abc#c01\"\n---\nbody\n", 2, "frontmatter id 'abc#c01' is not a plain name"),
        ("---\nid: [1, 2]\n---\nbody\n", 2, "frontmatter id ['1', '2'] is not a plain name"),
        ("---\nx: '" + "a" * 70_000 + "'\n---\nbody\n", 1, "frontmatter is 70005 characters long"),
    ],
)
def test_bad_frontmatter_is_one_warning_and_the_note_imports_body_only(tmp_path, types_config, text, line, message):
    write_vault(tmp_path, {"bad.md": text, "good.md": "# Good\n\nfine"})
    notes, issues = scan_vault(tmp_path, types_config)
    assert [(n.path, n.body) for n in notes] == [("bad.md", "body\n"), ("good.md", "# Good\n\nfine")]
    assert [(i.level, i.path, i.line) for i in issues] == [("warning", "bad.md", line)]
    assert message in issues[0].message


def test_a_symlink_to_a_file_outside_the_vault_is_not_read_and_reported(tmp_path, types_config):
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    (tmp_path / "elsewhere").mkdir()
    vault = tmp_path / "vault"
    write_vault(vault, {"good.md": "# Good\n\nfine", "inside/target.md": "# Target\n\nt"})
    os.symlink(secret, vault / "outside.md")
    os.symlink(tmp_path / "elsewhere", vault / "linked-folder")
    os.symlink(vault / "inside", vault / "alias-folder")     # inside the vault: its notes are read where they are
    notes, issues = scan_vault(vault, types_config)
    assert [n.path for n in notes] == ["good.md", "inside/target.md"]
    assert [str(i) for i in issues] == [
        "warning: linked-folder: links to a place outside the vault; not read (fix: move the target into the vault)",
        "error: outside.md: links to a place outside the vault; not read (fix: move the target into the vault)",
    ]


def test_a_symlink_loop_and_a_broken_link_are_one_report_line_each(tmp_path, types_config):
    write_vault(tmp_path, {"good.md": "# Good\n\nfine"})
    os.symlink(tmp_path / "y.md", tmp_path / "x.md")
    os.symlink(tmp_path / "x.md", tmp_path / "y.md")
    os.symlink(tmp_path / "gone.md", tmp_path / "broken.md")
    notes, issues = scan_vault(tmp_path, types_config)
    assert [n.path for n in notes] == ["good.md"]
    assert [(i.level, i.path, i.message.split(" (")[0]) for i in issues] == [
        ("error", "broken.md", "broken symlink"),
        ("error", "x.md", "symlink loop"),
        ("error", "y.md", "symlink loop"),
    ]


def test_a_folder_symlink_loop_is_one_report_line(tmp_path, types_config):
    write_vault(tmp_path, {"good.md": "# Good\n\nfine", "deep/inner/n.md": "# N\n\nn"})
    os.symlink(tmp_path, tmp_path / "deep" / "inner" / "back-to-root")     # deep/inner/back-to-root/deep/...
    os.symlink(tmp_path / "deep", tmp_path / "deep" / "up")
    notes, issues = scan_vault(tmp_path, types_config)
    assert [n.path for n in notes] == ["good.md", "deep/inner/n.md"]
    assert [str(i) for i in issues] == [
        "warning: deep/up: folder symlink loop (links to deep/, which holds it); not followed, the notes there are "
        "read once where they are",
        "warning: deep/inner/back-to-root: folder symlink loop (links to ./, which holds it); not followed, the "
        "notes there are read once where they are",
    ]


def test_a_fifo_named_like_a_note_is_reported_not_read(tmp_path, types_config):
    write_vault(tmp_path, {"good.md": "# Good\n\nfine"})
    os.mkfifo(tmp_path / "pipe.md")        # opening it for reading would wait for a writer forever
    with fails_after(60):
        notes, issues = scan_vault(tmp_path, types_config)
    assert [n.path for n in notes] == ["good.md"]
    assert [str(i) for i in issues] == ["error: pipe.md: is a FIFO (named pipe), not a regular file; not read"]


def test_a_fifo_swapped_in_after_the_scan_is_refused_by_the_read(tmp_path, types_config):
    os.mkfifo(tmp_path / "pipe.md")
    with fails_after(60), pytest.raises(VaultError, match="not a regular file"):
        read_note(tmp_path, tmp_path / "pipe.md", types_config)


def test_deeply_nested_yaml_is_one_warning_without_a_traceback(tmp_path, types_config, capfd, caplog):
    write_vault(tmp_path, {"deep.md": "---\nx: " + "[" * 5000 + "\n---\n# Deep\n\nbody"})
    notes, issues = scan_vault(tmp_path, types_config)
    assert [(n.path, n.body) for n in notes] == [("deep.md", "# Deep\n\nbody")]
    assert [str(i) for i in issues] == [
        "warning: deep.md:1: frontmatter is nested too deeply; the note was imported without its frontmatter "
        "(fix: flatten the nested lists or mappings)"]
    assert (capfd.readouterr().err, caplog.records) == ("", [])


def _scan_without_permission_override(vault: Path, out: Path, types_config) -> None:
    drop_permission_override()
    notes, issues = scan_vault(vault, types_config)
    out.write_text(json.dumps({"notes": [n.path for n in notes], "issues": [str(i) for i in issues]}))
    os._exit(0)


def test_a_folder_that_cannot_be_listed_is_one_report_line(tmp_path, types_config):
    """The folder is made unreadable with chmod 000. Root ignores file modes, so the scan runs in a child
    process that gave up root's permission override (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): the kernel really
    refuses the listing, no call is faked."""
    vault = write_vault(tmp_path / "vault", {"good.md": "# Good\n\nfine", "private/secret.md": "# S\n\ns",
                                             "private/deeper/more.md": "# M\n\nm"})
    (vault / "private").chmod(0)
    out = tmp_path / "out.json"
    try:
        assert run_child(lambda: _scan_without_permission_override(vault, out, types_config)) == 0
    finally:
        (vault / "private").chmod(0o755)
    assert json.loads(out.read_text()) == {"notes": ["good.md"], "issues": [
        "error: private/: cannot read folder (Permission denied); the notes in it were not read and their "
        "indexed versions are kept (fix: check its permissions)"]}


def test_decomposed_unicode_is_normalised_so_links_resolve(tmp_path, types_config):
    from mindnet.indexing.edges import LinkResolver
    nfd = unicodedata.normalize("NFD", "Übersicht")
    write_vault(tmp_path, {f"{nfd}.md": f"# {nfd}\n\ntext", "a.md": "# A\n\nsee [[Übersicht]]"})
    notes, _ = scan_vault(tmp_path, types_config)
    resolver = LinkResolver(notes)
    target = next(n for n in notes if n.path != "a.md")
    assert target.path == "Übersicht.md" and target.title == "Übersicht"
    assert resolver.resolve("Übersicht") == target.note_id


def test_tags_are_case_insensitive_like_obsidian(tmp_path, types_config):
    write_vault(tmp_path, {"a.md": "---\ntags: ML, Work, '#ml'\n---\n# A\n\ntext #Python and #python"})
    notes, _ = scan_vault(tmp_path, types_config)
    assert notes[0].tags == ["ml", "work", "python"]


@pytest.mark.parametrize("tag", ["ML", "#ml", " Ml "])
def test_tag_and_type_filters_match_any_spelling(tag):
    from mindnet.retrieval.query import QueryRequest
    request = QueryRequest(query="q", filters={"tags": [tag], "types": ["Project"]})
    assert (request.filters.tags, request.filters.types) == (["ml"], ["project"])


INDEXED_NOTES = {"good.md": "# Good\n\nfine, see [[Heading]]",
                 "private/secret.md": "# Secret\n\nindexed before the folder was locked"}
HOSTILE_NOTES = {
    "heading.md": "# Heading" + " " * 20_000 + "x\n\n## Part" + " " * 20_000 + "#\n\ntext",   # cubic before
    "tags.md": "# Tags\n\n" + "<a<a\u2039a" * 20_000 + "](](" * 20_000,                   # quadratic before
    "deep.md": "---\nx: " + "[" * 5000 + "\n---\n# Deep\n\nbody",
}


def _ingest_in_child(settings: dict[str, str], vault: Path, out: Path, err: Path) -> None:
    """`mindnet ingest --json` in this (child) process, without root's permission override, its stdout and
    stderr (file descriptors and Python streams) going to files."""
    drop_permission_override()
    from mindnet.cli import main
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
    logging.root.handlers.clear()                 # the CLI sets up its own logging, as in a shell
    os.environ.update(settings)
    code = main(["ingest", str(vault), "--json"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def test_a_hostile_vault_imports_with_one_report_line_per_bad_thing(tmp_path, fake_ollama):
    vault = write_vault(tmp_path / "vault", INDEXED_NOTES)
    settings = {f"MINDNET_{k}": str(v) for k, v in {
        "EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": tmp_path / "qdrant",
        "CACHE_DIR": tmp_path / "cache", "COLLECTION_PREFIX": "t", "TYPES_CONFIG": TYPES_YAML, "QDRANT_URL": "",
    }.items()}
    first = fake_settings(tmp_path, fake_ollama.url)
    app = Mindnet(first)
    app.ingest()
    app.close()
    write_vault(vault, HOSTILE_NOTES)
    os.symlink(vault / "loop-b.md", vault / "loop-a.md")
    os.symlink(vault / "loop-a.md", vault / "loop-b.md")
    os.mkfifo(vault / "pipe.md")
    os.symlink("/etc/hostname", vault / "outside.md")
    (vault / "private").chmod(0)
    out, err = tmp_path / "out.json", tmp_path / "err.txt"
    try:
        code = run_child(lambda: _ingest_in_child(settings, vault, out, err), timeout=300)
    finally:
        (vault / "private").chmod(0o755)
    report = json.loads(out.read_text())
    assert (code, "Traceback" in err.read_text()) == (0, False), err.read_text()[-3000:]
    assert [line.split(" (")[0] for line in report["skipped"]] == [
        "error: loop-a.md: symlink loop",
        "error: loop-b.md: symlink loop",
        "error: outside.md: links to a place outside the vault; not read",
        "error: pipe.md: is a FIFO",
        "error: private/: cannot read folder",
    ]
    assert [line.split(";")[0] for line in report["warnings"]] == [
        "warning: deep.md:1: frontmatter is nested too deeply"]
    assert (report["notes"], report["deleted"], report["new"]) == (4, 0, 3)
    app = Mindnet(first)
    try:
        check = check_index(app.store)
        paths = sorted(p["path"] for p in payloads(app.store, "notes", ["path"]))
        names = {p["path"]: (p["title"], p["names"]) for p in payloads(app.store, "notes", ["path", "title", "names"])}
    finally:
        app.close()
    assert (check.broken, paths) == (False, ["deep.md", "good.md", "heading.md", "private/secret.md", "tags.md"])
    assert names["heading.md"] == ("heading", ["Heading" + " " * 20_000 + "x"])


def test_a_recursion_error_while_reading_a_note_is_one_line_without_a_traceback(tmp_path, types_config,
                                                                                 monkeypatch, caplog):
    from mindnet.vault import scan

    def too_deep(root, path, types):
        raise RecursionError("maximum recursion depth exceeded")

    write_vault(tmp_path, {"deep.md": "# Deep\n\nx"})
    monkeypatch.setattr(scan, "read_note", too_deep)
    notes, issues = scan_vault(tmp_path, types_config)
    assert (notes, [str(i) for i in issues], caplog.records) == (
        [], ["error: deep.md: is nested too deeply to be read (fix: flatten its nested lists or quotes)"], [])


def test_the_library_reader_skips_a_fifo_and_a_symlink_loop_with_a_warning(tmp_path, caplog):
    from mindnet import read_vault
    write_vault(tmp_path, {"good.md": "# Good\n\nfine"})
    os.mkfifo(tmp_path / "pipe.md")
    os.symlink(tmp_path / "loop.md", tmp_path / "loop.md")
    with fails_after(60), caplog.at_level(logging.WARNING):
        docs = read_vault(tmp_path)
    assert [d.metadata["path"] for d in docs] == ["good.md"]
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "skipping error: loop.md: symlink loop", "skipping error: pipe.md: is a FIFO"]


def test_post_ingest_answers_with_the_report_for_a_vault_with_a_symlink_loop_and_a_fifo(tmp_path, make_app):
    from fastapi.testclient import TestClient

    from mindnet.api import create_app
    vault = write_vault(tmp_path / "vault", {"good.md": "# Good\n\nfine"})
    os.symlink(vault / "y.md", vault / "x.md")
    os.symlink(vault / "x.md", vault / "y.md")
    os.mkfifo(vault / "pipe.md")
    with fails_after(120), TestClient(create_app(make_app())) as client:
        response = client.post("/ingest", json={})
    assert response.status_code == 200, response.text
    assert [line.split(" (")[0] for line in response.json()["skipped"]] == [
        "error: pipe.md: is a FIFO", "error: x.md: symlink loop", "error: y.md: symlink loop"]
    assert response.json()["notes"] == 1
