"""The live index follows a real temp vault: real file writes, a running watchfiles watcher, real imports
into local Qdrant with the fake Ollama's embeddings."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from helpers_store import payloads
from helpers_vault import write_types, write_vault

from mindnet.api import create_app
from mindnet.indexing.integrity import check_index
from mindnet.live import LiveIndex

WAIT = 60   # generous: the machine is shared; the latency itself is measured by bench_live, not asserted here


def note(title: str, body: str, note_id: str | None = None) -> str:
    head = f"title: {title}\n" + (f"id: {note_id}\n" if note_id else "")
    return f"---\n{head}---\n{body}\n"


def paths_in_index(app) -> dict[str, str]:
    return {p["note_id"]: p["path"] for p in payloads(app.store, "notes", ["note_id", "path"])}


def chunk_texts(app) -> dict[str, str]:
    return {p["chunk_id"]: p["text"] for p in payloads(app.store, "chunks", ["chunk_id", "text"])}


def wait_for(live: LiveIndex, imports: int) -> None:
    """Until the live index has finished `imports` imports and nothing is pending."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if live.imports >= imports and live.wait_idle(0.05):
            return
        time.sleep(0.05)
    raise AssertionError(f"live index: {live.imports} imports after {WAIT} s, expected {imports}: {live.status()}")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {
        "a.md": note("Alpha", "Alpha spricht über Linsen.", "alpha"),
        "b.md": note("Beta", "Beta ist ein Projekt über Qdrant.", "b"),
    })


@pytest.fixture
def live(tmp_path: Path, vault: Path, make_app):
    types = write_types(tmp_path / "types.yaml")
    app = make_app(types_config=types)
    live = LiveIndex(app, watch=True).start()
    wait_for(live, 1)             # the catch-up import at start
    yield live
    live.stop()


def test_a_new_note_is_imported_after_its_save(live, vault) -> None:
    (vault / "c.md").write_text(note("Gamma", "Gamma ist neu."), encoding="utf-8")
    wait_for(live, 2)
    assert "c.md" in paths_in_index(live.mindnet).values()
    assert live.last.label == "c" and live.last.paths == ["c.md"] and live.last.report["new"] == 1


def test_a_modified_note_is_reimported(live, vault) -> None:
    (vault / "a.md").write_text(note("Alpha", "Alpha spricht jetzt über Bohnen.", "alpha"), encoding="utf-8")
    wait_for(live, 2)
    assert chunk_texts(live.mindnet)["alpha#c01"] == "Alpha spricht jetzt über Bohnen."
    assert live.last.report["changed"] == 1


def test_an_atomic_save_ends_in_one_correct_import(live, vault) -> None:
    tmp = vault / "a.md.tmp"       # how editors and Obsidian save: a temp file, then a rename over the note
    tmp.write_text(note("Alpha", "Alpha, atomar gespeichert.", "alpha"), encoding="utf-8")
    os.replace(tmp, vault / "a.md")
    wait_for(live, 2)
    time.sleep(1.0)                # nothing else may follow
    assert live.imports == 2
    assert chunk_texts(live.mindnet)["alpha#c01"] == "Alpha, atomar gespeichert."
    assert not (vault / "a.md.tmp").exists() and live.last.paths == ["a.md"]


def test_a_renamed_note_with_its_id_is_a_move(live, vault) -> None:
    (vault / "archiv").mkdir()
    os.replace(vault / "a.md", vault / "archiv" / "alpha-alt.md")
    wait_for(live, 2)
    report = live.last.report
    assert (report["moved"], report["new"], report["deleted"]) == (1, 0, 0)
    assert paths_in_index(live.mindnet)["alpha"] == "archiv/alpha-alt.md"
    assert check_index(live.mindnet.store).as_dict()["ok"]


def test_a_deleted_note_is_removed(live, vault) -> None:
    (vault / "b.md").unlink()
    wait_for(live, 2)
    assert set(paths_in_index(live.mindnet)) == {"alpha"}
    assert not [c for c in chunk_texts(live.mindnet) if c.startswith("b#")]
    assert live.last.report["deleted"] == 1


def test_a_burst_of_500_files_ends_in_exactly_one_import(tmp_path, vault, make_app) -> None:
    app = make_app(types_config=write_types(tmp_path / "types.yaml"))
    # a quiet period longer than any pause of a loop writing files on a busy machine (the default is 200 ms)
    live = LiveIndex(app, watch=True, quiet_ms=1500).start()
    try:
        wait_for(live, 1)
        for i in range(500):       # like a `git checkout`: many files written as fast as the disk takes them
            (vault / f"burst-{i:03d}.md").write_text(note(f"Burst {i}", f"Datei Nummer {i}."), encoding="utf-8")
        wait_for(live, 2)
        time.sleep(2.0)
        assert live.imports == 2
        assert live.last.report["new"] == 500 and live.last.label == "burst-000 +499"
        assert len(paths_in_index(app)) == 502
        assert check_index(app.store).as_dict()["ok"]
    finally:
        live.stop()


def test_a_types_config_edit_reimports_the_notes_it_affects(tmp_path, live) -> None:
    types = Path(live.mindnet.settings.types_path)
    data = yaml.safe_load(types.read_text(encoding="utf-8"))
    data["types"]["concept"]["retriever_weight"] = 0.33
    types.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    wait_for(live, 2)
    weights = {p["chunk_id"]: p["retriever_weight"]
               for p in payloads(live.mindnet.store, "chunks", ["chunk_id", "retriever_weight"])}
    assert weights == {"alpha#c01": 0.33, "b#c01": 0.33}
    assert live.last.report["changed"] == 2


def test_an_invalid_types_config_is_reported_and_the_old_one_stays(live) -> None:
    types = Path(live.mindnet.settings.types_path)
    types.write_text("types: [unclosed\n", encoding="utf-8")
    deadline = time.monotonic() + WAIT
    while live.error is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "invalid YAML" in live.error and "previous types config stays" in live.error
    assert live.mindnet.settings.types.types["concept"].retriever_weight == 1.0
    assert live.imports == 1


def test_health_reports_the_last_reimport(live, vault) -> None:
    (vault / "b.md").write_text(note("Beta", "Beta, geändert.", "b"), encoding="utf-8")
    wait_for(live, 2)
    live.mindnet.live = live
    body = TestClient(create_app(live.mindnet)).get("/health").json()
    last = body["live"]["last_reimport"]
    assert body["live"]["watching"] is True and body["live"]["error"] is None
    assert (last["label"], last["paths"], last["changed"]) == ("b", ["b.md"], 1)
    assert 0 <= last["seconds_ago"] < WAIT


def test_editor_temp_files_and_hidden_folders_start_no_import(live, vault) -> None:
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.md").write_text("# UI state", encoding="utf-8")
    (vault / ".a.md.swp").write_text("swap", encoding="utf-8")
    (vault / "notes.txt").write_text("not a note", encoding="utf-8")
    time.sleep(1.5)
    assert live.imports == 1 and live.status()["pending"] is False


def test_mindnet_watch_command_reimports_a_saved_note(tmp_path, vault, fake_ollama) -> None:
    import subprocess
    import sys
    env = dict(os.environ, MINDNET_EMBEDDING="ollama", MINDNET_OLLAMA_URL=fake_ollama.url,
               MINDNET_QDRANT_PATH=str(tmp_path / "qdrant"), MINDNET_CACHE_DIR=str(tmp_path / "cache"),
               MINDNET_TYPES_CONFIG=str(write_types(tmp_path / "types.yaml")), MINDNET_COLLECTION_PREFIX="t",
               NO_PROXY="127.0.0.1,localhost", PYTHONUNBUFFERED="1", COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "watch", str(vault)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout.readline().startswith("watching ")
        assert proc.stdout.readline().startswith("re-imported 'vault' in ")   # the catch-up at start
        (vault / "c.md").write_text(note("Gamma", "Gamma ist neu."), encoding="utf-8")
        assert proc.stdout.readline().startswith("re-imported 'c' in ")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_save_during_a_long_embedding_is_searchable_before_the_embedding_ends(tmp_path, make_app,
                                                                                 fake_ollama) -> None:
    from mindnet.retrieval.query import QueryRequest
    write_vault(tmp_path / "vault", {f"n{i:02d}.md": note(f"Notiz {i}", f"Text {i}.", f"n{i}") for i in range(40)})
    app = make_app(types_config=write_types(tmp_path / "types.yaml"), embed_concurrency=1)
    app.embedder.batch_size = 4
    fake_ollama.latency = 0.5                     # phase 2: 10 calls of 4 texts, half a second each
    live = LiveIndex(app, watch=True).start()
    try:
        deadline = time.monotonic() + WAIT
        while app.progress.as_dict()["phase"] != "embedding" and time.monotonic() < deadline:
            time.sleep(0.02)
        (vault := tmp_path / "vault" / "neu.md").write_text(note("Neu", "Kürbiskernöl aus der Steiermark.", "neu"),
                                                           encoding="utf-8")
        found = None
        while time.monotonic() < deadline and not found:
            found = [h for h in app.query(QueryRequest(query="Kürbiskernöl", mode="hybrid"))["hits"]
                     if h["note_id"] == "neu"]
            time.sleep(0.05)
        assert found and app.progress.as_dict()["texts_embedded"] < 41   # found before everything was embedded
        wait_for(live, 2)
        assert check_index(app.store).unembedded == 0 and vault.exists()
        from mindnet.store.collections import point_id
        stored = app.store.retrieve("chunks", [point_id("neu#c01")], dense=True)
        assert len(stored[0].dense) == fake_ollama.dim      # with its vector once embedded
    finally:
        live.stop()
