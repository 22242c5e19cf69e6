"""`mindnet check` over an embedded index whose files are what mindnet last left there (the record
`<prefix>.files.json`, `mindnet.store.file_record`): judged by ids and payload-index counts, with the same report
as reading every payload; any file changed since (garbled, or bytes changed in place with its size and mtime
kept) sends it back to reading every payload, which names the damaged collection."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers_vault import import_vault, point_cli_at

from mindnet.cli import main
from mindnet.indexing import integrity
from mindnet.indexing.integrity import check_index
from mindnet.store.collections import point_id
from mindnet.store.engine import Point
from mindnet.store.factory import open_folder

VAULT = {
    "a.md": "# Alpha\n\nAlpha plans with [[Beta]], [[Gamma#Setup]] and [[Nowhere]].",
    "b.md": "# Beta\n\nBeta is linked from Alpha.",
    "c.md": "# Gamma\n\n## Setup\n\nSteps to set it up.\n\n## Other\n\nGamma [[rel:depends_on Beta]].",
}


@pytest.fixture
def folder(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The vault imported; the CLI's environment points at it."""
    settings = import_vault(tmp_path, fake_ollama.url, VAULT, log_dir=tmp_path / "logs")
    return point_cli_at(tmp_path, fake_ollama.url, settings, monkeypatch)


@pytest.fixture
def readings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a check read every chunk's and edge's payload."""
    calls: list[int] = []
    real = integrity._by_reading

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(integrity, "_by_reading", counted)
    return calls


def report(folder: Path, *, read_all: bool = False) -> dict:
    store = open_folder(folder / "qdrant", "t")
    try:
        if read_all:
            store.verify_files = lambda: None      # as without a record
        return check_index(store).as_dict()
    finally:
        store.close()


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, " ".join((out.out + out.err).split())


def record(folder: Path) -> dict:
    return json.loads((folder / "qdrant" / "t.files.json").read_text())["files"]


def test_an_imported_index_is_judged_by_counts_with_the_report_reading_gives(folder: Path, readings) -> None:
    assert any(p.startswith("t_edges/") for p in record(folder)) and any(p.startswith("t_chunks/")
                                                                         for p in record(folder))
    first = report(folder)
    second = report(folder)              # what opening and closing the shards rewrote is in the record again
    assert readings == [], "a recorded index read every payload"
    everything = report(folder, read_all=True)
    assert readings == [1]
    assert first == second == everything, (first, everything)
    assert first["ok"] and first["unresolved"] and first["edges"] > 0, first    # an unresolved link is listed


def test_the_cli_check_uses_the_record_and_keeps_it_usable(folder: Path, capsys, readings) -> None:
    for _ in range(2):
        code, out = cli(capsys, "check")
        assert code == 0 and "index OK" in out, out
    assert readings == []


def test_problems_written_after_the_record_are_found_by_counts_too(folder: Path, readings) -> None:
    store = open_folder(folder / "qdrant", "t")
    try:
        chunk = next(r for r in store.scroll("chunks", payload=["chunk_id", "note_id"]))
        store.delete("chunks", [chunk.id])                                   # a listed chunk gone
        store.upsert("chunks", [Point(point_id("gone#c01"), {"chunk_id": "gone#c01", "note_id": "gone"})])
        edge = next(r for r in store.scroll("edges") if r.payload.get("resolved", True)
                    and r.payload["target_id"] != r.payload["source_id"] and not r.payload.get("target_chunk"))
        store.upsert("edges", [Point(edge.id, edge.payload | {"target_id": "deleted-note"})])   # dangling
        store.write_token("after-the-damage")          # what an import does last: the files are recorded
    finally:
        store.close()
    found = report(folder)
    assert readings == []
    assert found == report(folder, read_all=True)
    assert found["missing_chunks"] == [chunk.payload["chunk_id"]] and found["orphan_chunks"] == ["gone#c01"]
    assert edge.payload["edge_id"] in [d["edge_id"] for d in found["dangling_edges"]], found


def test_a_write_without_a_commit_leaves_no_record(folder: Path, readings) -> None:
    store = open_folder(folder / "qdrant", "t")
    try:
        chunk = next(r for r in store.scroll("chunks", payload=["chunk_id"]))
        store.delete("chunks", [chunk.id])                 # an import killed after a write, before its commit
        assert not (folder / "qdrant" / "t.files.json").exists()
    finally:
        store.close()
    assert not (folder / "qdrant" / "t.files.json").exists()
    assert report(folder)["missing_chunks"] == [chunk.payload["chunk_id"]]
    assert readings == [1]


def garble(folder: Path, kind: str, *, keep_stat: bool = False) -> list[str]:
    changed = []
    for page in sorted((folder / "qdrant" / f"t_{kind}" / "segments").glob("*/payload_storage/*.dat")):
        st = page.stat()
        with open(page, "r+b") as fh:
            fh.write(os.urandom(min(4096, st.st_size) if keep_stat else 4096))
        if keep_stat:
            os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns))
            assert (page.stat().st_size, page.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
        changed.append(str(page.relative_to(folder / "qdrant")))
    return changed


def test_a_garbled_edges_payload_file_is_named(folder: Path, capsys) -> None:
    garble(folder, "edges")
    code, out = cli(capsys, "check")
    assert code == 2 and "Traceback" not in out, out
    assert "t_edges: the edges collection is damaged" in out and "`mindnet ingest --full` rebuilds it" in out, out


@pytest.mark.parametrize("kind", ["chunks", "edges"])
def test_bytes_changed_in_place_with_size_and_mtime_kept_are_found(folder: Path, capsys, kind: str) -> None:
    changed = garble(folder, kind, keep_stat=True)
    store = open_folder(folder / "qdrant", "t")
    try:
        assert set(changed) <= set(store.verify_files()), changed
    finally:
        store.close()
    code, out = cli(capsys, "check")
    assert code == 2 and f"t_{kind}: the {kind} collection is damaged" in out, out
