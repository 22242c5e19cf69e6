"""A large vault is read and chunked in worker processes: the plan is the one reading note by note gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers_vault import TYPES_YAML, copy_sample_vault, load_types

from mindnet.indexing import reading
from mindnet.indexing.planning import plan_vault
from mindnet.indexing.report import ImportReport


def _plan(vault: Path, monkeypatch, pool_min: int, on_chunked=None) -> tuple[list, list[str]]:
    monkeypatch.setattr(reading, "POOL_MIN_NOTES", pool_min)
    report = ImportReport(vault=str(vault))
    planned = plan_vault(vault, load_types(), report, model_key="k", on_chunked=on_chunked)
    rows = [(p.note.path, p.note.note_id, p.note.title, p.fingerprint, p.edges_hash,
             [(n.node_id, n.get_content(), sorted(n.metadata.items(), key=str)) for n in p.nodes],
             sorted(str(sorted(e.payload().items(), key=str)) for e in p.edges)) for p in planned]
    return rows, sorted(str(i) for i in report.issues)


def _vault(tmp_path: Path) -> Path:
    vault = copy_sample_vault(tmp_path / "vault")
    extra = vault / "extra"
    extra.mkdir()
    (extra / "bad yaml.md").write_text("---\ntitle: [unclosed\n---\nbody [[Zettelkasten]]\n", encoding="utf-8")
    (extra / "copy.md").write_text("---\nid: dup\n---\nfirst\n", encoding="utf-8")
    (extra / "copy2.md").write_text("---\nid: dup\n---\nsecond\n", encoding="utf-8")
    (extra / "empty.md").write_text("", encoding="utf-8")
    (extra / "binary.md").write_bytes(b"\xff\xfe\x00\x00garbage")
    for i in range(40):
        (extra / f"n{i}.md").write_text(f"# Heading {i}\n\nText about [[n{(i + 1) % 40}]] and Zettelkasten.\n",
                                        encoding="utf-8")
    return vault


def test_a_vault_read_in_worker_processes_plans_exactly_as_one_read_note_by_note(tmp_path, monkeypatch) -> None:
    assert reading.workers() >= 1
    vault = _vault(tmp_path)
    alone, alone_issues = _plan(vault, monkeypatch, pool_min=10 ** 9)
    handed: list[str] = []
    pooled, pooled_issues = _plan(vault, monkeypatch, pool_min=10,
                                  on_chunked=lambda note, nodes, fp: handed.append(note.path))
    assert len(alone) > 60
    assert pooled == alone
    assert pooled_issues == alone_issues
    assert any("duplicate id 'dup'" in i for i in alone_issues)
    assert any("bad yaml.md" in i for i in alone_issues)
    assert sorted(handed) == sorted(row[0] for row in alone)     # every note handed to the embedding as read


def test_the_pool_is_used_only_for_a_large_vault_and_a_machine_with_two_cores(tmp_path, monkeypatch) -> None:
    vault = _vault(tmp_path)
    started: list[int] = []
    real = reading._pooled

    def spy(*args):
        started.append(1)
        return real(*args)

    monkeypatch.setattr(reading, "_pooled", spy)
    _plan(vault, monkeypatch, pool_min=10 ** 9)
    assert started == []
    monkeypatch.setattr(reading, "workers", lambda: 1)
    _plan(vault, monkeypatch, pool_min=10)
    assert started == []
    monkeypatch.setattr(reading, "workers", lambda: 2)
    _plan(vault, monkeypatch, pool_min=10)
    assert started == [1]


# an import that reads in a pool, then is killed: it prints its workers' process ids and waits
_KILLED_IMPORT = """
import json, multiprocessing, sys, time
from pathlib import Path
from mindnet.settings import TypesConfig, load_yaml_model
from mindnet.indexing import reading
from mindnet.indexing.node_parser import MarkdownNoteParser

if __name__ == "__main__":
    root, types_yaml = Path(sys.argv[1]), Path(sys.argv[2])
    types = load_yaml_model(types_yaml, TypesConfig)
    reading.POOL_MIN_NOTES = 10
    notes = reading.read_notes(root, sorted(root.glob("*.md")), types, MarkdownNoteParser.from_config(types))
    next(notes)                                   # the pool runs and has handed back its first batch
    print(json.dumps([p.pid for p in multiprocessing.active_children()]), flush=True)
    time.sleep(600)                               # killed here, the rest of its results never read
"""


def test_workers_end_with_an_import_that_was_killed(tmp_path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(600):     # more results than fit in the pipes: some worker is sending when the import dies
        (vault / f"n{i}.md").write_text(f"# Note {i}\\n\\n" + "Some words about [[n0]] and more. " * 40 + "\\n",
                                        encoding="utf-8")
    script = tmp_path / "killed_import.py"
    script.write_text(_KILLED_IMPORT, encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script), str(vault), str(TYPES_YAML)], stdout=subprocess.PIPE,
                             text=True)
    try:
        workers = json.loads(child.stdout.readline())
        assert workers, "the pool started no worker"
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 60
    while (alive := [pid for pid in workers if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive == [], f"workers of the killed import still running: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:    # a zombie has ended (its parent, the forkserver, reaps it when it ends too)
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True
