"""The start file (mindnet.store.start_file) and `StartupReader`: closing a local index leaves what a search needs;
the next `Mindnet` answers searches from it before local Qdrant has opened, with exactly the results Qdrant gives,
and switches to Qdrant once it is open. A start file that does not match Qdrant's files (a write since, a damaged
file) is never trusted: searches then wait for Qdrant, as before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers_service import warming_with_open_held
from helpers_ui import free_port
from helpers_vault import SAMPLE_QUERIES, imported_sample_vault
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.api import create_app
from mindnet.errors import IndexOpeningError
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.settings import Settings
from mindnet.store import snapshot, start_file
from mindnet.store.collections import DENSE, WITHOUT_DENSE, names
from mindnet.store.startup_reader import StartupReader

QUERIES = SAMPLE_QUERIES


@pytest.fixture()
def env(tmp_path: Path):
    with imported_sample_vault(tmp_path) as settings:     # the clean close wrote the start file
        yield settings


def folder(settings: Settings) -> Path:
    return Path(settings.qdrant_path)


def hits(app: Mindnet, request: dict) -> list[tuple]:
    body = app.query(QueryRequest(**request))
    return [(h["node_id"], round(h["score"], 5), h["explanation"]["reasons"] if h.get("explanation") else None,
             [p["node_id"] for p in h.get("passages") or []]) for h in body["hits"]]


def test_closing_writes_a_start_file_that_matches_qdrant(env: Settings) -> None:
    assert start_file.start_path(folder(env), "t").exists()
    assert start_file.payloads_path(folder(env), "t").exists()
    assert start_file.why_not_current(folder(env), "t") is None


def test_searches_from_the_start_file_equal_searches_from_qdrant(env: Settings) -> None:
    app = Mindnet(env)
    try:
        _ = app.retriever
        assert app.answering_from_start_file and not app.opened     # Qdrant itself is not open
        before = [hits(app, r) for r in QUERIES]
        assert all(before[:3]) and any("not embedded" not in str(h) for h in before[0])
        assert app.retriever.snapshot_status == "start file"
        _ = app.client                                              # opens Qdrant: the retriever switches
        assert not app.answering_from_start_file and isinstance(app.retriever.client, QdrantClient)
        after = [hits(app, r) for r in QUERIES]
        assert before == after
        app.retriever.invalidate()                                  # and mirrors read again from the index agree
        assert [hits(app, r) for r in QUERIES] == before
    finally:
        app.close()


def test_the_reader_answers_dense_queries_and_reads_as_local_qdrant_does(env: Settings) -> None:
    data = snapshot.load(start_file.snapshot_file(folder(env), "t"))
    reader = StartupReader("t", data, start_file.load(folder(env), "t", data))
    client = QdrantClient(path=str(folder(env)))
    chunks = names("t")["chunks"]
    try:
        rng = np.random.default_rng(3)
        dim = reader.start.vectors.shape[1]
        some_notes = sorted(set(data.chunk_note))[:4]
        filters = [None, qm.Filter(must=[qm.FieldCondition(key="type", match=qm.MatchAny(any=["concept"]))]),
                   qm.Filter(must=[qm.FieldCondition(key="note_id", match=qm.MatchAny(any=some_notes))]),
                   qm.Filter(must=[qm.HasIdCondition(has_id=data.chunk_pids[5:40])])]
        for flt in filters:
            for _ in range(3):
                q = rng.normal(size=dim).tolist()
                mine = reader.query_points(chunks, query=q, using=DENSE, query_filter=flt, limit=7,
                                           with_payload=True, with_vectors=[DENSE]).points
                theirs = client.query_points(chunks, query=q, using=DENSE, query_filter=flt, limit=7,
                                             with_payload=True, with_vectors=[DENSE]).points
                assert [str(p.id) for p in mine] == [str(p.id) for p in theirs]
                np.testing.assert_allclose([p.score for p in mine], [p.score for p in theirs], rtol=1e-5)
                assert [p.payload for p in mine] == [p.payload for p in theirs]
                np.testing.assert_allclose([p.vector[DENSE] for p in mine], [p.vector[DENSE] for p in theirs],
                                           rtol=1e-6)
        ids = data.chunk_pids[:10]
        assert [r.payload for r in reader.retrieve(chunks, ids=ids)] == \
            [r.payload for r in client.retrieve(chunks, ids=ids)]
        for name in names("t").values():
            assert reader.count(name).count == client.count(name, exact=True).count
        assert reader.count(chunks, count_filter=WITHOUT_DENSE).count == \
            client.count(chunks, count_filter=WITHOUT_DENSE, exact=True).count
        with pytest.raises(IndexOpeningError, match="still opening"):
            reader.query_points(names("t")["edges"], query=[0.0] * dim, using=DENSE)
    finally:
        client.close()


def test_a_write_to_qdrant_since_makes_the_start_file_untrusted(env: Settings) -> None:
    client = QdrantClient(path=str(folder(env)))         # another tool changes the index without mindnet
    chunks = names("t")["chunks"]
    victim = client.scroll(chunks, limit=1)[0][0].id
    client.delete(chunks, points_selector=qm.PointIdsList(points=[victim]))
    client.close()
    assert "Qdrant's files changed" in start_file.why_not_current(folder(env), "t")
    app = Mindnet(env)
    try:
        _ = app.retriever                                 # opens Qdrant itself
        assert not app.answering_from_start_file and app.opened
        assert str(victim) not in {h["node_id"] for r in QUERIES for h in app.query(QueryRequest(**r))["hits"]}
    finally:
        app.close()                                      # and a clean close writes a current one again
    assert start_file.why_not_current(folder(env), "t") is None


@pytest.mark.parametrize("damage", ["truncated", "payloads", "other snapshot"])
def test_a_damaged_start_file_is_never_trusted(env: Settings, damage: str) -> None:
    base = folder(env)
    if damage == "truncated":
        path = start_file.start_path(base, "t")
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "payloads":
        path = start_file.payloads_path(base, "t")
        path.write_bytes(path.read_bytes()[:-10])
    else:
        snap = start_file.snapshot_file(base, "t")
        data = snapshot.load(snap)
        data.digest = "0" * 64
        snapshot.save(data, snap)
    assert start_file.why_not_current(base, "t") is not None
    app = Mindnet(env)
    try:
        _ = app.retriever
        assert not app.answering_from_start_file and app.opened
        assert hits(app, QUERIES[0])                     # from Qdrant itself
    finally:
        app.close()
    assert start_file.why_not_current(base, "t") is None


def test_serve_answers_searches_while_qdrant_is_still_opening(env: Settings, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    with warming_with_open_held(env, monkeypatch) as (app, open_now):
        with TestClient(create_app(app)) as http:
            for _ in range(300):
                body = http.get("/health").json()
                if body["searchable"]:
                    break
                threading.Event().wait(0.02)
            assert (body["opening"], body["searchable"], body["searching_from"]) == (True, True, "start file")
            during = http.post("/query", json=QUERIES[0])
            assert during.status_code == 200 and during.json()["hits"]
            open_now()
            body = http.get("/health").json()
            assert (body["opening"], body["searching_from"]) == (False, "index")
            after = http.post("/query", json=QUERIES[0]).json()
            assert [h["node_id"] for h in after["hits"]] == [h["node_id"] for h in during.json()["hits"]]


def test_an_import_after_the_switch_is_searched_from_qdrant(env: Settings, tmp_path: Path) -> None:
    app = Mindnet(env)
    try:
        _ = app.retriever
        assert app.answering_from_start_file
        note = tmp_path / "vault" / "concepts" / "zebrafisch.md"
        note.write_text("---\ntitle: Zebrafisch\ntype: concept\n---\nDer Zebrafisch ist ein Modellorganismus.\n")
        app.ingest()                                      # opens Qdrant (the retriever switches), then writes
        assert not app.answering_from_start_file
        found = app.query(QueryRequest(query="Zebrafisch Modellorganismus", mode="hybrid"))["hits"]
        assert found and found[0]["path"] == "concepts/zebrafisch.md"
    finally:
        app.close()
    assert start_file.why_not_current(folder(env), "t") is None


def _environ(env: Settings, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, MINDNET_EMBEDDING="ollama", MINDNET_OLLAMA_URL=env.ollama_url,
                MINDNET_QDRANT_PATH=str(env.qdrant_path), MINDNET_CACHE_DIR=str(env.cache_dir),
                MINDNET_VAULT_ROOT=str(env.vault_root), MINDNET_LOG_DIR=str(tmp_path / "logs"),
                MINDNET_COLLECTION_PREFIX="t", MINDNET_TYPES_CONFIG=str(env.types_path),
                NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")


def test_check_says_whether_the_start_file_is_current(env: Settings, tmp_path: Path) -> None:
    def check() -> dict:
        out = subprocess.run([sys.executable, "-m", "mindnet.cli", "check", "--json"], env=_environ(env, tmp_path),
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        return json.loads(out.stdout)
    assert check()["start_file"] == "current"
    start_file.payloads_path(folder(env), "t").write_bytes(b"{}")     # damaged: check rewrites it at its close
    assert start_file.why_not_current(folder(env), "t") == "the start file's payloads changed"
    assert check()["start_file"] == "current"


def test_mindnet_serve_leaves_a_current_start_file_when_it_stops(env: Settings, tmp_path: Path) -> None:
    """The real server: it searches at start, imports a new note over HTTP, and on SIGTERM closes the index and
    writes a start file that matches what Qdrant now holds."""
    port = free_port()
    environ = _environ(env, tmp_path)
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--no-ui", "--no-watch", "--no-import",
                             "--port", str(port)], env=environ, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/health", timeout=5).json()["searchable"]:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert httpx.post(f"{url}/query", json=QUERIES[0], timeout=60).json()["hits"], \
            (tmp_path / "serve.log").read_text(errors="replace")
        (Path(env.vault_root) / "concepts" / "Zebrafisch.md").write_text(
            "---\ntitle: Zebrafisch\ntype: concept\n---\nDer Zebrafisch ist ein Modellorganismus.\n")
        assert httpx.post(f"{url}/ingest", json={}, timeout=120).status_code == 200
        chunks = httpx.get(f"{url}/health", timeout=5).json()["collections"]["chunks"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
    assert start_file.why_not_current(folder(env), "t") is None, (tmp_path / "serve.log").read_text(errors="replace")
    data = snapshot.load(start_file.snapshot_file(folder(env), "t"))
    assert len(data.chunk_pids) == chunks and "Zebrafisch" in data.titles
    assert len(start_file.load(folder(env), "t", data).payloads) == chunks


def test_a_one_shot_search_never_opens_qdrant_and_a_held_folder_is_not_read(env: Settings) -> None:
    """`mindnet query` searches from the start file without opening Qdrant (nothing to wait for, nothing to
    write at close); while another process holds the folder, the files are not read: the lock error says who."""
    app = Mindnet(env)
    assert app.query(QueryRequest(**QUERIES[1]))["hits"]
    assert not app.opened
    app.close()
    assert start_file.why_not_current(folder(env), "t") is None
    holder = subprocess.Popen([sys.executable, "-c", "import json,os,sys,time\n"
                               f"open({str(folder(env) / 'mindnet.pid')!r}, 'w').write(json.dumps("
                               "{'pid': os.getpid(), 'command': 'other', 'started': 0}))\n"
                               "print('held', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        other = Mindnet(env)
        assert other._start_file_retriever() is None
    finally:
        holder.kill()
        holder.wait()
