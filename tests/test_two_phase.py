"""Two-phase import: searchable after phase 1 (no vectors yet), vectors filled in phase 2; progress in /health;
`mindnet serve` on a never-imported vault; kill -9 in phase 2 and a rerun."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from fastapi.testclient import TestClient
from helpers_store import payloads
from helpers_ui import free_port
from helpers_vault import write_vault

from mindnet.api import create_app
from mindnet.indexing.integrity import check_index
from mindnet.retrieval.query import QueryRequest

WAIT = 90


def notes(n: int, word: str = "Notiz") -> dict[str, str]:
    return {f"n{i:03d}.md": f"---\ntitle: {word} {i}\nid: {word.lower()}{i}\n---\n{word} Nummer {i} über "
                            f"Thema{i % 7}.\n" for i in range(n)}


def test_search_works_after_phase_1_and_says_what_is_not_embedded(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", {"alt.md": "---\ntitle: Alt\nid: alt\n---\nLinsensuppe mit Speck, alt."})
    app = make_app()
    app.ingest()                                   # one note fully embedded
    write_vault(tmp_path / "vault", {"neu.md": "---\ntitle: Neu\nid: neu\n---\nLinsensuppe vegetarisch, neu."})
    original = fake_ollama.embed_fn                # the backend cannot embed the new note (yet)
    fake_ollama.embed_fn = lambda text: [] if "vegetarisch" in text else original(text)
    report = app.ingest()
    assert (report.new, report.vectors_missing) == (1, 1)

    hybrid = app.query(QueryRequest(query="Linsensuppe", mode="hybrid", explain=True))
    by_note = {h["note_id"]: h for h in hybrid["hits"]}
    assert set(by_note) == {"alt", "neu"}          # the unembedded note is found by its keywords
    assert hybrid["trace"]["unembedded_chunks"] == 1
    assert "1 of 2 chunks are not embedded yet" in hybrid["trace"]["notice"]
    assert any("not embedded yet" in r for r in by_note["neu"]["explanation"]["reasons"])
    assert not any("not embedded yet" in r for r in by_note["alt"]["explanation"]["reasons"])
    assert by_note["neu"]["score_breakdown"]["dense"] is None and by_note["alt"]["score_breakdown"]["dense"] > 0

    semantic = app.query(QueryRequest(query="Linsensuppe", mode="semantic"))
    assert [h["note_id"] for h in semantic["hits"]] == ["alt"]
    assert semantic["trace"]["notice"].startswith("semantic search covers 1 of 2 chunks: 1 are not embedded yet")

    fake_ollama.embed_fn = original
    again = app.ingest()                           # phase 2 of the next run adds the missing vector
    assert (again.new, again.changed, again.embedded_texts, again.vectors_missing) == (0, 0, 1, 0)
    semantic = app.query(QueryRequest(query="Linsensuppe", mode="semantic"))
    assert sorted(h["note_id"] for h in semantic["hits"]) == ["alt", "neu"]
    assert "notice" not in semantic["trace"] and semantic["trace"]["unembedded_chunks"] == 0


def test_phase_1_takes_cached_vectors_and_asks_no_model_for_them(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", notes(5))
    make_app().ingest()
    fake_ollama.clear_requests()
    app = make_app(collection_prefix="u")          # a new index, the same cache
    report = app.ingest()
    assert (report.new, report.embedded_texts, report.vectors_missing) == (5, 0, 0)
    assert fake_ollama.count("/api/embed") == 1    # the size probe only


def test_health_reports_progress_while_phase_2_runs(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", notes(12))
    app = make_app(embed_concurrency=1)
    app.embedder.batch_size = 4                    # 3 calls of 4 texts, each waiting for the fake model
    fake_ollama.latency = 1.0
    client = TestClient(create_app(app))
    assert client.get("/health").json()["import"]["phase"] == "idle"
    worker = threading.Thread(target=app.ingest)
    worker.start()
    seen = []
    deadline = time.monotonic() + WAIT
    while worker.is_alive() and time.monotonic() < deadline:
        body = client.get("/health").json()["import"]
        # the embedding begins beside phase 1 (phase "notes") and goes on after it (phase "embedding"): on a busy
        # machine phase 1 may outlast it, so either phase counts
        if body["phase"] in ("notes", "embedding") and 0 < body["texts_embedded"] < body["texts_total"]:
            seen.append(body)
        time.sleep(0.1)
    worker.join()
    assert seen, "no /health answer during phase 2"
    mid = seen[0]
    assert (mid["running"], mid["notes"], mid["texts_total"]) == (True, 12, 12)
    assert mid["texts_per_s"] > 0 and mid["eta_seconds"] >= 0 and mid["texts_missing"] == 12 - mid["texts_embedded"]
    done = client.get("/health").json()
    assert (done["import"]["phase"], done["import"]["texts_embedded"], done["import"]["running"]) == ("done", 12, False)
    assert done["collections"]["chunks"] == 12


def _env(tmp_path: Path, ollama_url: str) -> dict[str, str]:
    return dict(os.environ, MINDNET_EMBEDDING="ollama", MINDNET_OLLAMA_URL=ollama_url,
                MINDNET_QDRANT_PATH=str(tmp_path / "qdrant"), MINDNET_CACHE_DIR=str(tmp_path / "cache"),
                MINDNET_VAULT_ROOT=str(tmp_path / "vault"), MINDNET_LOG_DIR=str(tmp_path / "logs"),
                MINDNET_EMBED_CONCURRENCY="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")


def test_serve_on_a_never_imported_vault_answers_while_it_embeds(tmp_path, fake_ollama) -> None:
    write_vault(tmp_path / "vault", notes(60))
    fake_ollama.latency = 1.0                     # each batch of 16 texts waits a second: phase 2 takes a while
    port = free_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--no-ui", "--port", str(port)],
                            env=_env(tmp_path, fake_ollama.url), cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        hits, deadline = None, time.monotonic() + WAIT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"{url}/health", timeout=5).json()
            except httpx.HTTPError:
                time.sleep(0.2)
                continue
            if health["import"]["notes_written"]:      # phase 1 has written its first notes
                answer = httpx.post(f"{url}/query", json={"query": "Thema3 Notiz", "mode": "hybrid"}, timeout=30)
                hits = answer.json()
                break
            time.sleep(0.2)
        assert hits is not None, (tmp_path / "serve.log").read_text(errors="replace")
        assert hits["hits"] and hits["trace"]["unembedded_chunks"] > 0
        assert health["import"]["running"] is True and health["live"]["watching"] is True
        while time.monotonic() < deadline:     # the background import finishes by itself
            health = httpx.get(f"{url}/health", timeout=5).json()
            if health["import"]["phase"] == "done" and health["import"]["texts_embedded"] == 60:
                break
            time.sleep(0.3)
        assert (health["import"]["texts_embedded"], health["import"]["texts_total"]) == (60, 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def test_kill_9_in_phase_2_then_a_rerun_leaves_a_correct_index(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", notes(40))
    fake_ollama.latency = 2.0                      # 3 calls of 16 texts, one at a time: 6 s of embedding
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "ingest", "--json"],
                            env=_env(tmp_path, fake_ollama.url), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT
    # phase 1 ends with the link graph's file written; the embedding (begun beside phase 1) goes on
    while not (tmp_path / "qdrant" / "mindnet.graph.npz").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    fake_ollama.latency = 0.0
    app = make_app(collection_prefix="mindnet", qdrant_path=tmp_path / "qdrant")
    with app.index_lock:
        killed = check_index(app.store)
    assert killed.notes == 40 and killed.unembedded > 0 and not killed.broken   # phase 1 was complete
    report = app.ingest()
    assert (report.new, report.unchanged, report.vectors_missing) == (0, 40, 0)
    after = check_index(app.store)
    assert after.as_dict()["ok"] and after.unembedded == 0
    paths = sorted(p["path"] for p in payloads(app.store, "notes", ["path"]))
    assert paths == sorted(notes(40))


def test_a_query_before_the_first_notes_are_written_says_the_import_is_running(tmp_path, make_app) -> None:
    import pytest

    from mindnet.errors import EmptyIndexError
    app = make_app()
    with pytest.raises(EmptyIndexError, match="import your vault first"):
        app.query(QueryRequest(query="x"))
    app.progress.start()                           # what the import does first
    app.progress.update(notes_total=1000)
    with pytest.raises(EmptyIndexError, match=r"the first import is reading the vault \(1000 notes so far\)"):
        app.query(QueryRequest(query="x"))


def test_phase_1_writes_the_saved_notes_first_and_yields_to_newer_changes(tmp_path, make_app,
                                                                          monkeypatch) -> None:
    from mindnet.indexing import pipeline
    monkeypatch.setattr(pipeline, "BATCH_NOTES", 2)
    write_vault(tmp_path / "vault", notes(6))
    app = make_app()
    report = app.ingest(first=["n004.md"], should_stop=lambda: True)    # newer changes wait after one batch
    assert (report.new, report.stopped_early) == (1, True)    # the saved note alone, in its own first batch
    written = sorted(p["path"] for p in payloads(app.store, "notes", ["path"]))
    assert written == ["n004.md"]
    assert check_index(app.store).as_dict()["ok"]
    rest = app.ingest()
    assert (rest.new, rest.unchanged, rest.vectors_missing) == (5, 1, 0)


def test_a_vector_is_not_written_onto_a_chunk_rewritten_while_it_was_embedded(tmp_path, make_app,
                                                                             monkeypatch) -> None:
    from mindnet.indexing import vectors
    write_vault(tmp_path / "vault", {"a.md": "---\ntitle: A\nid: a\n---\nerster Text"})
    app = make_app()
    app.ingest(embed=False)                        # phase 1 only: the chunk waits for its vector
    embed_many = vectors.Embedder.aembed_many

    async def while_a_save_lands(self, texts, **kwargs):
        out = await embed_many(self, texts, **kwargs)
        write_vault(tmp_path / "vault", {"a.md": "---\ntitle: A\nid: a\n---\nzweiter Text"})
        import asyncio
        await asyncio.to_thread(app.ingest, embed=False)   # the server's phase 1 rewrites the chunk meanwhile
        return out

    monkeypatch.setattr(vectors.Embedder, "aembed_many", while_a_save_lands)
    report = app.fill_vectors()
    assert (report.embedded_texts, report.vectors_missing) == (1, 1)   # embedded, but not written: stale
    monkeypatch.setattr(vectors.Embedder, "aembed_many", embed_many)
    assert app.fill_vectors().vectors_missing == 0
    from mindnet.store.collections import point_id
    chunk = app.store.retrieve("chunks", [point_id("a#c01")], payload=["text"], dense=True)[0]
    assert chunk.payload["text"] == "zweiter Text"
    expected = np.asarray(app.embedder.cached_vectors(["A\n\nzweiter Text"])["A\n\nzweiter Text"])
    np.testing.assert_allclose(chunk.dense, expected / np.linalg.norm(expected), rtol=1e-6)   # stored normalised


def test_phase_2_embeds_the_next_batch_while_it_writes_this_one(tmp_path, make_app, monkeypatch) -> None:
    """A fast backend must not idle during the index writes: batch k+1 is already embedding when batch k is
    written. The write of each batch waits (at most 10 s) for the next batch's embedding to begin; written one
    after the other, it would wait in vain and record False."""
    from mindnet.indexing import vectors
    write_vault(tmp_path / "vault", notes(3))
    app = make_app(embed_concurrency=1)
    app.ingest(embed=False)                        # three chunks without vectors
    app.embedder.batch_size = 1                    # one chunk per batch: three batches
    began: list[threading.Event] = []
    embed_many = vectors.Embedder.aembed_many

    async def recording(self, texts, **kwargs):
        began.append(threading.Event())
        began[-1].set()
        return await embed_many(self, texts, **kwargs)

    update = app.store.set_dense
    overlapped: list[bool] = []

    def writing(*args, **kwargs):
        batch = len(overlapped)                    # 0-based batch being written
        if batch + 1 < 3:                          # the last batch has no successor to wait for
            deadline = time.monotonic() + 10
            while len(began) < batch + 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            overlapped.append(len(began) >= batch + 2)
        else:
            overlapped.append(True)
        return update(*args, **kwargs)

    monkeypatch.setattr(vectors.Embedder, "aembed_many", recording)
    monkeypatch.setattr(app.store, "set_dense", writing)
    report = app.fill_vectors()
    assert report.vectors_missing == 0 and len(began) == 3
    assert overlapped == [True, True, True]


def test_phase_2_stopped_early_writes_what_it_embedded_and_starts_no_next_batch(tmp_path, make_app,
                                                                              fake_ollama) -> None:
    write_vault(tmp_path / "vault", notes(4))
    app = make_app(embed_concurrency=1)
    app.ingest(embed=False)
    app.embedder.batch_size = 1
    fake_ollama.clear_requests()
    report = app.fill_vectors(should_stop=lambda: True)
    assert fake_ollama.count("/api/embed") == 1    # one batch embedded, none started after the stop
    assert report.vectors_missing == 3
    assert app.fill_vectors().vectors_missing == 0
