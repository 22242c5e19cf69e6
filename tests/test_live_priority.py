"""A save while a long import runs: the import yields after its current write step, the saved note is planned
alone and written first, and the notes the import planned but did not write are written after it from their
plans (not read, chunked and linked again). The embedding begins beside phase 1, from its first notes.
Real files, the real watcher, local Qdrant and the fake Ollama."""

from __future__ import annotations

import threading
import time

from helpers_store import payloads
from helpers_vault import write_types, write_vault
from test_incremental_plan import BASE, _assert_same_as_full, _edit, _stamp, reference  # noqa: F401 - fixture
from test_live_watch import note

from mindnet.indexing.integrity import check_index
from mindnet.live import LiveIndex
from mindnet.retrieval.query import QueryRequest

WAIT = 90   # generous: the machine is shared; latencies are measured by bench_live, not asserted here
BULK = {f"bulk/n{i:03d}.md": f"# N{i}\n\ntext {i} über die Amsel\n" for i in range(70)}


def _reads(monkeypatch) -> list[str]:
    """The note files the planner reads from now on."""
    import mindnet.indexing.planning as planning
    read: list[str] = []
    original = planning.load_note
    monkeypatch.setattr(planning, "load_note", lambda root, path, types: (read.append(path.name),
                                                                         original(root, path, types))[1])
    return read


def test_a_save_during_a_stopped_first_import_is_planned_alone_and_the_rest_follows_from_its_plans(
        tmp_path, make_app, reference, monkeypatch) -> None:  # noqa: F811 - the fixture
    vault = write_vault(tmp_path / "vault", {**BASE, **BULK})
    _stamp(vault, 0)
    app = make_app()
    first = app.ingest(should_stop=lambda: True)           # the first import yields after one write step
    assert first.stopped_early and first.planned == "vault"
    assert len(list(payloads(app.store, "notes", ["path"]))) < 40
    # a save: a note that BASE's unresolved [[Quitte]] links (those notes are planned again, by their links)
    _edit(vault, "concepts/quitte.md", "# Quitte\n\nQuitten sind hart.\n")
    _stamp(vault, 1)
    read = _reads(monkeypatch)
    saved = app.ingest(first=["concepts/quitte.md"], should_stop=lambda: True)
    assert "quitte.md" in read and not [r for r in read if r.startswith("n0")]   # no unwritten note read again
    assert (saved.planned, saved.new, saved.stopped_early) == ("changes", 1, True)   # the save alone, first
    assert "concepts/quitte.md" in {p["path"] for p in payloads(app.store, "notes", ["path"])}
    # a note not written yet goes, another is edited, then the import runs to its end
    _edit(vault, "bulk/n069.md", None)
    _edit(vault, "bulk/n068.md", "# N68\n\nnun über Birne\n")
    _stamp(vault, 2)
    read.clear()
    report = app.ingest()
    assert sorted(read) == ["n068.md"]
    assert not report.stopped_early and report.vectors_missing == 0
    _assert_same_as_full(app, report, reference)


def test_a_new_process_after_a_stopped_import_finishes_it_correctly(tmp_path, make_app, reference,  # noqa: F811
                                                                   ) -> None:
    vault = write_vault(tmp_path / "vault", {**BASE, **BULK})
    _stamp(vault, 0)
    make_app().ingest()
    for rel in list(BULK)[:40]:                             # 40 notes change: more than one write step
        _edit(vault, rel, BULK[rel] + "\nnachgetragen\n")
    _stamp(vault, 1)
    app = make_app()
    assert app.ingest(should_stop=lambda: True).stopped_early
    # the plans die with the process; the manifest it saved must still lead to the right index
    _edit(vault, list(BULK)[39], None)                      # a changed note not written yet goes meanwhile
    _stamp(vault, 2)
    app = make_app()
    report = app.ingest()
    assert report.planned == "changes" and not report.stopped_early
    _assert_same_as_full(app, report, reference)


def _wait_in_last_write(monkeypatch, began: list[str]) -> list[bool]:
    """Phase 1's last write step waits (at most 10 s) for the embedding to have begun; a phase 2 that starts
    only after phase 1 would let it wait in vain (False)."""
    from mindnet.indexing import pipeline, vectors
    embed_many = vectors.Embedder.aembed_many

    async def recording(self, texts, **kwargs):
        began.append("embed")
        return await embed_many(self, texts, **kwargs)

    write = pipeline.Importer._write_changed
    overlapped: list[bool] = []

    def writing(self, batch, stored, report):
        if self.progress.notes_written + len(batch) == self.progress.notes_to_write:   # the last step
            deadline = time.monotonic() + 10
            while not began and time.monotonic() < deadline:
                time.sleep(0.01)
            overlapped.append(bool(began))
        return write(self, batch, stored, report)

    monkeypatch.setattr(vectors.Embedder, "aembed_many", recording)
    monkeypatch.setattr(pipeline.Importer, "_write_changed", writing)
    monkeypatch.setattr(pipeline, "BATCH_NOTES", 2)
    return overlapped


def test_the_import_embeds_beside_phase_1(tmp_path, make_app, monkeypatch) -> None:
    write_vault(tmp_path / "vault", {f"n{i}.md": note(f"Notiz {i}", f"Text Nummer {i}.", f"n{i}")
                                     for i in range(6)})
    app = make_app()
    overlapped = _wait_in_last_write(monkeypatch, [])
    report = app.ingest()
    assert overlapped == [True]
    assert (report.new, report.embedded_texts, report.vectors_missing) == (6, 6, 0)   # each text once
    assert check_index(app.store).as_dict()["ok"]


def test_the_import_without_overlap_embeds_only_after_phase_1(tmp_path, make_app, monkeypatch) -> None:
    """The check above can fail: with the overlap off, the last write waits in vain."""
    write_vault(tmp_path / "vault", {f"n{i}.md": note(f"Notiz {i}", f"Text {i}.", f"n{i}") for i in range(4)})
    app = make_app()
    app.importer.overlap = False
    overlapped = _wait_in_last_write(monkeypatch, [])
    report = app.ingest()
    assert overlapped == [False] and report.vectors_missing == 0


def test_the_server_embeds_beside_the_first_import(tmp_path, make_app, monkeypatch) -> None:
    write_vault(tmp_path / "vault", {f"n{i}.md": note(f"Notiz {i}", f"Text Nummer {i}.", f"n{i}")
                                     for i in range(6)})
    app = make_app(types_config=write_types(tmp_path / "types.yaml"))
    overlapped = _wait_in_last_write(monkeypatch, [])
    live = LiveIndex(app, watch=False).start()
    try:
        assert live.wait_idle(WAIT)
        assert overlapped == [True]
        assert check_index(app.store).unembedded == 0
    finally:
        live.stop()


def test_a_save_while_the_first_import_writes_is_found_before_the_rest_is_written(tmp_path, make_app,
                                                                                   monkeypatch) -> None:
    from mindnet.indexing import pipeline
    vault = write_vault(tmp_path / "vault", {f"n{i:02d}.md": note(f"Notiz {i}", f"Text {i}.", f"n{i}")
                                             for i in range(40)})
    _stamp(vault, 0)     # written long ago (a file written 2 s before it is read is read again next time)
    app = make_app(types_config=write_types(tmp_path / "types.yaml"))
    monkeypatch.setattr(pipeline, "BATCH_NOTES", 2)
    write = pipeline.Importer._write_changed
    steps = threading.Event()

    def slow(self, batch, stored, report):              # 20 write steps of half a second: a long first import
        write(self, batch, stored, report)
        steps.set()
        time.sleep(0.5)

    monkeypatch.setattr(pipeline.Importer, "_write_changed", slow)
    live = LiveIndex(app, watch=True).start()
    try:
        assert steps.wait(WAIT)                            # the first import has written its first notes
        read = _reads(monkeypatch)
        (tmp_path / "vault" / "neu.md").write_text(note("Neu", "Kürbiskernöl aus der Steiermark.", "neu"),
                                                   encoding="utf-8")
        deadline = time.monotonic() + WAIT
        found = False
        while time.monotonic() < deadline and not found:
            found = any(h["note_id"] == "neu" for h in
                        app.query(QueryRequest(query="Kürbiskernöl", mode="hybrid"))["hits"])
            written = len(list(payloads(app.store, "notes", ["path"])))
            time.sleep(0.05)
        assert found and written < 41                      # found while the first import's notes still come
        assert read == ["neu.md"]                          # the notes it had planned were not read again
        assert live.wait_idle(WAIT)
        assert len(list(payloads(app.store, "notes", ["path"]))) == 41
        assert check_index(app.store).as_dict()["ok"]
    finally:
        live.stop()
