"""An unchanged re-import reports from the manifest's summary (`mindnet.indexing.summary`) without loading the
manifest, and every change the manifest would find still leads to the import that change needs: notes added,
deleted, moved or edited, an edit within the mtime tick of the last read, a changed types config, embedding
model, mindnet or pipeline version, a failed or interrupted import, a damaged index or summary."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers_vault import write_types, write_vault
from test_incremental_plan import BASE, Reference, _assert_same_as_full, _edit, _stamp, _stored

from mindnet.indexing import planning, summary
from mindnet.indexing import state as state_module
from mindnet.indexing.report import ImportReport
from mindnet.indexing.state import IndexState

MORE = {
    "broken.md": "---\ntitle: [unclosed\n---\nsee [[Nowhere]] and [[Birne#Gibt es nicht]]\n",
    "people/amsel.md": "# Amsel\n\nEin Vogel, der Kirschen frisst. [[Kirsche]] [[Fehlt auch]]\n",
}


def _report(report: ImportReport) -> dict:
    return {k: v for k, v in report.as_dict().items() if not k.startswith("seconds")}


def _summary_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "manifest-t.summary.json"


def _no_manifest_load(monkeypatch) -> None:
    monkeypatch.setattr(IndexState, "load", classmethod(lambda *a, **k: pytest.fail("the manifest was loaded")))


def _imported(tmp_path: Path, make_app, files: dict | None = None, **overrides) -> Path:
    """A vault imported until its summary is written (the first run's phase 2 writes it)."""
    vault = write_vault(tmp_path / "vault", files or BASE)
    (vault / "gone.md").symlink_to(vault / "nowhere.md")        # a broken link: a report line of the scan
    _stamp(vault, 0)
    make_app(**overrides).ingest()
    assert _summary_file(tmp_path).is_file()
    return vault


@pytest.fixture
def reference_t(tmp_path, fake_ollama):
    ref = Reference(tmp_path, fake_ollama.url)
    yield ref
    ref.app.close()


def test_an_unchanged_reimport_reports_from_the_summary_what_the_manifest_gives(tmp_path, make_app, monkeypatch):
    """Fails on main: the unchanged re-import loaded the whole manifest (seconds at 30,000 notes)."""
    _imported(tmp_path, make_app, {**BASE, **MORE})
    _summary_file(tmp_path).rename(tmp_path / "kept.json")
    by_manifest = make_app().ingest()           # loads the manifest (and writes the summary again)
    assert _summary_file(tmp_path).read_text() == (tmp_path / "kept.json").read_text()
    with monkeypatch.context() as m:
        _no_manifest_load(m)
        m.setattr(planning, "plan_changes", lambda *a, **k: pytest.fail("the vault was planned"))
        app = make_app()
        by_summary = app.ingest()
        assert (app.importer.store_open, app.opened) == (False, False)     # nothing opened, nothing written
    assert _report(by_summary) == _report(by_manifest)
    assert (by_summary.planned, by_summary.unchanged, by_summary.notes) == ("changes", 7, 7)
    assert {"gone.md", "broken.md"} <= {i.path for i in by_summary.issues}
    assert any(kind == "link" for kind in (i.kind for i in by_summary.issues))
    assert by_summary.unresolved and by_summary.edges_by_kind.get("mentions", 0) > 0


EDITS = {
    "added": ({"concepts/quitte.md": "# Quitte\n\nQuitten sind hart.\n"}, {"new": 1}),
    "deleted": ({"concepts/birne.md": None}, {"deleted": 1}),
    "moved": ({"concepts/apfel.md": None, "archiv/apfel.md": BASE["concepts/apfel.md"]}, {"moved": 1}),
    "edited, same size": ({"concepts/birne.md": BASE["concepts/birne.md"].replace("kein", "ein ")},
                          {"changed": 1}),
    "saved unchanged": ({"concepts/birne.md": BASE["concepts/birne.md"]}, {"changed": 0, "unchanged": 5}),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_a_changed_vault_is_planned_from_the_manifest(tmp_path, make_app, reference_t, monkeypatch, what):
    vault = _imported(tmp_path, make_app)
    reference_t.ingest()
    files, counts = EDITS[what]
    for rel, text in files.items():
        _edit(vault, rel, text)
    _stamp(vault, 1)
    app = make_app()
    report = app.ingest()
    assert report.planned == "changes"
    assert {k: getattr(report, k) for k in counts} == counts
    _assert_same_as_full(app, report, reference_t)
    with monkeypatch.context() as m:      # and the summary follows the change
        _no_manifest_load(m)
        assert make_app().ingest().unchanged == report.notes


def test_an_edit_within_the_mtime_tick_of_the_last_read_is_found(tmp_path, make_app):
    """Files written just before the import read them: an edit of the same size with the mtime restored (as a
    coarse mtime tick hides it) must be read again, so no summary vouches for them."""
    vault = write_vault(tmp_path / "vault", BASE)
    soon = time.time_ns() + 5 * 10**9      # in the tick the import reads them in, however slow the machine
    for path in vault.rglob("*.md"):
        os.utime(path, ns=(soon, soon))
    make_app().ingest()
    assert not _summary_file(tmp_path).exists()
    path = vault / "concepts/birne.md"
    info = path.stat()
    path.write_text(BASE["concepts/birne.md"].replace("kein", "ein "), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (info.st_size, info.st_mtime_ns)
    report = make_app().ingest()
    assert (report.planned, report.changed) == ("changes", 1)


AHEAD_NS = 30 * 10**9


def _written_just_before(vault: Path) -> None:
    """Every file's mtime in the tick the import reads it in, however slow the machine (30 s ahead)."""
    soon = time.time_ns() + AHEAD_NS
    for path in vault.rglob("*.md"):
        os.utime(path, ns=(soon, soon))


def _outlasting_the_tick(monkeypatch, first=lambda: None):
    """A progress callback (phase 1, after its first write step) that runs `first`, then moves the clock the
    manifest write confirms entries by past the files' mtime tick, as a large import's own time does (no
    waiting on the machine's clock)."""
    calls: list[int] = []

    def progress(*_: object) -> None:
        if not calls:
            calls.append(1)
            first()
            later = time.time_ns() + AHEAD_NS + 5 * 10**9
            monkeypatch.setattr(state_module, "time", SimpleNamespace(time_ns=lambda: later))
    return progress


def test_notes_read_right_after_they_were_written_are_trusted_once_their_tick_is_past(tmp_path, make_app,
                                                                                     monkeypatch):
    """Fails on main: a vault written just before its first import got no summary (no entry could vouch for
    its file), so the next unchanged import loaded the whole manifest (18 s against 1.5 s at 100,000 notes)."""
    vault = write_vault(tmp_path / "vault", BASE)
    _written_just_before(vault)
    notes = make_app().ingest(progress=_outlasting_the_tick(monkeypatch)).notes
    assert _summary_file(tmp_path).is_file()
    with monkeypatch.context() as m:
        _no_manifest_load(m)
        assert make_app().ingest().unchanged == notes


def test_a_note_rewritten_within_its_tick_after_it_was_read_is_not_trusted(tmp_path, make_app, monkeypatch):
    """The same, but one file is rewritten (same size, mtime restored) after the import read it: the bytes no
    longer match what was indexed, so its entry cannot vouch for it and the next import reads it again."""
    vault = write_vault(tmp_path / "vault", BASE)
    _written_just_before(vault)
    path = vault / "concepts/birne.md"

    def rewrite() -> None:
        info = path.stat()
        path.write_text(BASE["concepts/birne.md"].replace("kein", "ein "), encoding="utf-8")
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    make_app().ingest(progress=_outlasting_the_tick(monkeypatch, rewrite))
    assert not _summary_file(tmp_path).exists()
    report = make_app().ingest()
    assert (report.planned, report.changed) == ("changes", 1)


def test_a_changed_types_config_plans_the_whole_vault(tmp_path, make_app):
    types = write_types(tmp_path / "types.yaml")
    _imported(tmp_path, make_app, types_config=types)
    write_types(types, **{"mentions.enabled": False})
    report = make_app(types_config=types).ingest()
    assert (report.planned, report.mention_edges) == ("vault", 0)


def test_a_changed_embedding_model_plans_the_whole_vault_and_embeds_again(tmp_path, make_app, fake_ollama):
    _imported(tmp_path, make_app)
    fake_ollama.models.add("another-model")
    report = make_app(embedding_model="another-model").ingest()
    assert report.planned == "vault" and report.embedded_texts > 0


def test_a_changed_pipeline_version_plans_the_whole_vault(tmp_path, make_app, monkeypatch):
    _imported(tmp_path, make_app)
    monkeypatch.setattr(planning, "PIPELINE_VERSION", planning.PIPELINE_VERSION + "-next")
    assert make_app().ingest().planned == "vault"


def test_another_mindnet_version_loads_the_manifest_and_writes_its_own_summary(tmp_path, make_app, monkeypatch):
    _imported(tmp_path, make_app)
    monkeypatch.setattr(summary, "_mindnet_version", lambda: "99.0")
    loads = []
    original = IndexState.load.__func__
    monkeypatch.setattr(IndexState, "load", classmethod(lambda cls, *a: loads.append(1) or original(cls, *a)))
    assert (make_app().ingest().unchanged, loads) == (5, [1])
    assert json.loads(_summary_file(tmp_path).read_text())["mindnet"] == "99.0"
    assert (make_app().ingest().unchanged, loads) == (5, [1])


def test_an_import_that_failed_half_way_is_not_taken_for_unchanged(tmp_path, make_app, monkeypatch, reference_t):
    """The failed run wrote a new note, then the file went again: the vault is as the summary saw it, but the
    index is not."""
    vault = _imported(tmp_path, make_app)
    _edit(vault, "concepts/quitte.md", "# Quitte\n\nQuitten sind hart.\n")
    _stamp(vault, 1)
    app = make_app()
    original = app.importer._write_changed

    def write_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise RuntimeError("disk gone")
    monkeypatch.setattr(app.importer, "_write_changed", write_then_fail)
    with pytest.raises(RuntimeError):
        app.ingest()
    monkeypatch.undo()
    _edit(vault, "concepts/quitte.md", None)
    app = make_app()
    report = app.ingest()
    assert (report.planned, report.deleted) == ("vault", 1)
    _assert_same_as_full(app, report, reference_t)


def test_an_interrupted_import_is_continued(tmp_path, make_app, reference_t):
    vault = _imported(tmp_path, make_app)
    write_vault(vault, {f"bulk/n{i:03d}.md": f"# N{i}\n\ntext {i}\n" for i in range(70)})   # two batches
    _stamp(vault, 1)
    stopped = make_app().ingest(should_stop=lambda: True)
    assert stopped.stopped_early
    app = make_app()
    report = app.ingest()
    assert (report.planned, report.stopped_early, report.new > 0) == ("changes", False, True)
    _assert_same_as_full(app, report, reference_t)


@pytest.mark.parametrize("damage", ["a collection's folder", "the token", "the manifest", "the summary"])
def test_a_damaged_index_manifest_or_summary_is_not_taken_for_unchanged(tmp_path, make_app, reference_t, damage):
    _imported(tmp_path, make_app)
    reference_t.ingest()
    manifest = tmp_path / "cache" / "manifest-t.json"
    if damage == "a collection's folder":
        shutil.rmtree(tmp_path / "qdrant" / "t_edges")
    elif damage == "the token":            # what an import leaves from its first write until its commit
        meta = tmp_path / "qdrant" / "mindnet.json"
        data = json.loads(meta.read_text())
        data["prefixes"]["t"]["token"] = None
        meta.write_text(json.dumps(data))
    elif damage == "the manifest":
        manifest.write_text(manifest.read_text()[:-100], encoding="utf-8")
    else:
        _summary_file(tmp_path).write_text('{"version": 1, "token"', encoding="utf-8")
    app = make_app()
    report = app.ingest()
    assert report.planned == ("changes" if damage == "the summary" else "vault")
    assert _stored(app) == _stored(reference_t.app)
    if damage != "a collection's folder":    # the index is made again: every note is written
        assert report.unchanged == 5


def test_the_manifest_written_row_by_row_is_the_json_of_the_whole_state(tmp_path, make_app):
    """The manifest is written in pieces (one string of it cost 0.53 GB more memory at 100,000 notes): the file
    is the JSON of the whole state, byte for byte, and loads back to the same entries."""
    _imported(tmp_path, make_app, {**BASE, **MORE})
    manifest = tmp_path / "cache" / "manifest-t.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    state = IndexState.load(manifest, data["token"], data["config_key"])
    assert state is not None and len(state.entries) > 3
    state.dirty = {"a", "b"}
    again = tmp_path / "again.json"
    state.save(again, "token-2")
    whole = {"version": data["version"], "token": "token-2", "config_key": data["config_key"], "dirty": ["a", "b"],
             "vectors_complete": state.vectors_complete, "fields": data["fields"],
             "entries": [[getattr(e, f) for f in data["fields"]] for e in state.entries.values()]}
    assert again.read_text(encoding="utf-8") == json.dumps(whole, separators=(",", ":"))
    loaded = IndexState.load(again, "token-2", data["config_key"])
    assert loaded is not None and loaded.entries == state.entries and loaded.dirty == {"a", "b"}
