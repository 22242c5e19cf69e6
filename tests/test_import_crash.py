"""Crash safety of the import: a real child process is killed (SIGKILL) right after each of its writes to
the index while it imports a scripted change set (a changed note, a deleted note, a new note that heals a link and
so rewrites another note's edges only). A rerun must then leave an index that `check` passes and that equals a
fresh import of the vault, whether the vault stayed as it was or changed again before the rerun (the new note
deleted: the reproduction of a dangling edge that survived every incremental import)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers_process import kill_after_writes, run_child
from helpers_store import copy_index_folder
from helpers_vault import fake_settings, write_vault

from mindnet.indexing.integrity import check_index
from mindnet.service import Mindnet
from mindnet.store.engine import KINDS

BEFORE = {
    "a.md": "# Alpha\n\nAlpha plans with [[Beta]] and [[Gamma]].",    # [[Beta]] is unresolved at first
    "c.md": "# Gamma\n\nGamma will be deleted.",
    "d.md": "# Delta\n\nDelta text, version one.",
    "e.md": "# Epsilon\n\nEpsilon [[rel:depends_on Gamma]] and [[Delta]].",
}
# the change set: Beta is added (heals Alpha's link), Gamma deleted (Alpha and Epsilon lose a target), Delta edited
AFTER = {k: v for k, v in BEFORE.items() if k != "c.md"} | {
    "b.md": "# Beta\n\nBeta heals the link from Alpha.",
    "d.md": "# Delta\n\nDelta text, version two, a little longer.",
}
AFTER_UNDONE = {k: v for k, v in AFTER.items() if k != "b.md"}     # Beta deleted again before the rerun


def snapshot(app: Mindnet) -> dict[str, dict[str, dict]]:
    """Every point's payload per collection (without the file time, which differs between copies)."""
    return {kind: {r.id: {k: v for k, v in r.payload.items() if k != "updated"} for r in app.store.scroll(kind)}
            for kind in KINDS}


def settings_in(folder: Path, url: str):
    return fake_settings(folder, url)


def import_in_child(folder: Path, url: str, kill_after: int, log: Path | None = None) -> int:
    def child() -> None:
        kill_after_writes(kill_after, str(log) if log else None)
        app = Mindnet(settings_in(folder, url))
        app.ingest()
        app.close()
        os._exit(0)
    return run_child(child)


def fresh_import(folder: Path, url: str, files: dict[str, str]) -> dict[str, dict[str, dict]]:
    write_vault(folder / "vault", files)
    app = Mindnet(settings_in(folder, url))
    try:
        app.ingest()
        return snapshot(app)
    finally:
        app.close()


@pytest.fixture
def indexed(tmp_path: Path, fake_ollama) -> Path:
    """A folder holding the vault BEFORE the change set, imported (Qdrant folder and embedding cache)."""
    base = tmp_path / "base"
    fresh_import(base, fake_ollama.url, BEFORE)
    return base


def prepare(base: Path, target: Path) -> Path:
    copy_index_folder(base, target)
    for name in BEFORE:
        (target / "vault" / name).unlink()
    write_vault(target / "vault", AFTER)
    return target


def test_the_change_set_exercises_every_phase(indexed: Path, tmp_path: Path, fake_ollama) -> None:
    folder = prepare(indexed, tmp_path / "whole")
    app = Mindnet(settings_in(folder, fake_ollama.url))
    report = app.ingest()
    app.close()
    assert (report.new, report.changed, report.deleted, report.edges_rewritten) == (1, 1, 1, 2)


def test_a_kill_at_any_write_is_finished_by_the_next_run(indexed: Path, tmp_path: Path, fake_ollama) -> None:
    log = tmp_path / "writes.log"
    assert import_in_child(prepare(indexed, tmp_path / "count"), fake_ollama.url, 0, log) == 0
    writes = log.read_text().split()
    assert len(writes) >= 10, writes
    expected = {"after": fresh_import(tmp_path / "ref-after", fake_ollama.url, AFTER),
                "undone": fresh_import(tmp_path / "ref-undone", fake_ollama.url, AFTER_UNDONE)}
    failures = []
    for n in range(1, len(writes) + 1):
        for rerun in ("after", "undone"):
            folder = prepare(indexed, tmp_path / f"kill{n}-{rerun}")
            code = import_in_child(folder, fake_ollama.url, n)
            assert code == -9, f"write {n} ({writes[n - 1]}): the child was not killed (exit {code})"
            if rerun == "undone":
                (folder / "vault" / "b.md").unlink()
            app = Mindnet(settings_in(folder, fake_ollama.url))
            try:
                app.ingest()
                check = check_index(app.store)
                state = snapshot(app)
            finally:
                app.close()
            shutil.rmtree(folder)     # one folder at a time on disk, not one per write and rerun
            if check.broken or state != expected[rerun]:
                failures.append({"killed after write": n, "write": writes[n - 1], "rerun vault": rerun,
                                 "check": {k: v for k, v in check.as_dict().items() if v and k != "ok"},
                                 "extra": {k: sorted(set(state[k]) - set(expected[rerun][k])) for k in state},
                                 "missing": {k: sorted(set(expected[rerun][k]) - set(state[k])) for k in state}})
    assert failures == [], json.dumps(failures, indent=1)[:4000]


def test_an_edge_no_note_lists_is_removed_by_the_next_incremental_import(indexed: Path, fake_ollama) -> None:
    """An older version rewrote an unchanged note's edges before its record; killed in between, it left an
    edge no record lists (here: Alpha -> a note that is gone), which no incremental import removed."""
    from mindnet.store.collections import point_id
    from mindnet.store.engine import Point
    app = Mindnet(settings_in(indexed, fake_ollama.url))
    try:
        alpha = next(r.payload for r in app.store.scroll("notes") if r.payload["path"] == "a.md")
        leftover = {"edge_id": f"{alpha['note_id']}->gone", "note_id": alpha["note_id"], "kind": "references",
                    "source_id": alpha["note_id"], "target_id": "gone", "resolved": True, "rule_id": "explicit"}
        app.store.upsert("edges", [Point(point_id(leftover["edge_id"]), leftover)])
        assert check_index(app.store).unlisted == [leftover["edge_id"]]
        report = app.ingest()
        assert (report.unchanged, check_index(app.store).broken) == (4, False)
        assert snapshot(app) == fresh_import(indexed.parent / "reference", fake_ollama.url, BEFORE)
    finally:
        app.close()


@pytest.mark.parametrize(
    ("broken", "kept", "title"),
    [
        # frontmatter that does not parse: the note is searchable by its body, its frontmatter is gone
        ("---\ntitle: \"Neu\ntype: project\n---\n# Delta neu\n\nneuer Text", False, "Delta neu"),
        # a body that cannot be read (not UTF-8): the indexed version stays until the file is fixed
        ("# Delta\n\nbroken \xff".encode("latin-1"), True, "Delta"),
    ],
)
def test_a_note_that_breaks_is_imported_body_only_unless_its_body_cannot_be_read(
        indexed: Path, fake_ollama, broken, kept: bool, title: str) -> None:
    path = indexed / "vault" / "d.md"
    path.write_bytes(broken if isinstance(broken, bytes) else broken.encode())
    app = Mindnet(settings_in(indexed, fake_ollama.url))
    try:
        report = app.ingest()
        note = next(r.payload for r in app.store.scroll("notes") if r.payload["path"] == "d.md")
        texts = [r.payload["text"] for r in app.store.scroll("chunks") if r.payload["note_id"] == note["note_id"]]
        assert check_index(app.store).broken is False
    finally:
        app.close()
    assert ([i.level for i in report.issues], report.changed) == (["error" if kept else "warning"], 0 if kept else 1)
    assert (note["title"], note["names"], note["type"], note["frontmatter"]) == ("d", [title], "concept", {})
    assert texts == (["# Delta\n\nDelta text, version one."] if kept else ["# Delta neu\n\nneuer Text"])


def test_check_after_a_kill_says_a_plain_ingest_repairs_it(indexed: Path, tmp_path: Path, fake_ollama,
                                                          monkeypatch, capsys) -> None:
    from mindnet.cli import main
    log = tmp_path / "writes.log"
    assert import_in_child(prepare(indexed, tmp_path / "count"), fake_ollama.url, 0, log) == 0
    first_upsert = log.read_text().split().index("upsert") + 1     # the relink phase's pending record
    folder = prepare(indexed, tmp_path / "killed")
    assert import_in_child(folder, fake_ollama.url, first_upsert) == -9
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": folder / "qdrant",
                       "CACHE_DIR": folder / "cache", "COLLECTION_PREFIX": "t", "QDRANT_URL": "",
                       "TYPES_CONFIG": settings_in(folder, fake_ollama.url).types_config}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    assert main(["check"]) == 1
    assert "index BROKEN: run `mindnet ingest`\n" in capsys.readouterr().out
    assert main(["ingest", str(folder / "vault")]) == 0
    capsys.readouterr()
    assert main(["check"]) == 0
    assert "index OK" in capsys.readouterr().out
