"""`mindnet serve` starts at once: the index opens and the link graph loads in the background while /health
answers; the folder is opened exactly once however many threads ask; a folder another process holds is
reported before the server starts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_service import warming_with_open_held
from helpers_vault import imported_sample_vault

import mindnet.service as service_module
from mindnet.api import create_app
from mindnet.errors import StoreLockedError
from mindnet.service import Mindnet


@pytest.fixture()
def settings(tmp_path: Path):
    with imported_sample_vault(tmp_path) as settings:
        yield settings


def test_health_answers_while_the_index_is_still_opening(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    with warming_with_open_held(settings, monkeypatch) as (app, open_now):
        with TestClient(create_app(app)) as http:
            body = http.get("/health").json()
            assert (body["status"], body["opening"], body["collections"]) == ("ok", True, {})
            assert (body["searchable"], body["searching_from"]) == (False, None)
            open_now()
            body = http.get("/health").json()
            assert body["opening"] is False and body["collections"]["chunks"] > 0
            assert app.retriever.graph_status in ("loaded", "current")   # warm: the graph is read before a search


def test_the_folder_is_opened_once_however_many_threads_ask(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = []
    real_open = service_module.open_store

    def counting_open(s, **kwargs):
        opened.append(threading.current_thread().name)
        return real_open(s, **kwargs)
    monkeypatch.setattr(service_module, "open_store", counting_open)
    app = Mindnet(settings)
    clients, errors = [], []

    def ask() -> None:
        try:
            clients.append(app.store)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(exc)
    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert errors == [] and len(opened) == 1 and len({id(c) for c in clients}) == 1
    finally:
        app.close()


def test_a_folder_held_by_another_process_is_reported_before_the_server_starts(settings) -> None:
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from mindnet.store.factory import open_folder
        store = open_folder({str(settings.qdrant_path)!r})
        print("ready", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "ready\n"
        app = Mindnet(settings)
        with pytest.raises(StoreLockedError, match=f"in use by process {holder.pid} "):
            app.check_free()
        assert not app.opened
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    Mindnet(settings).check_free()        # gone: free again (its mindnet.pid is left behind, stale)


def test_no_request_gets_a_500_at_any_moment_of_a_start(tmp_path: Path) -> None:
    """From the first moment the port answers until the index is open and warm, every /query, /health and
    /chat request is answered (a search waits for the index to open; 409/503 would be honest too), never 500."""
    import time

    import httpx
    from helpers_ui import ChatServer, free_port

    server = ChatServer(tmp_path)
    server.start()                          # imports the sample vault, then serves; stopped to start again
    server.proc.terminate()
    server.proc.wait(timeout=30)
    server.port = free_port()
    server.url = f"http://127.0.0.1:{server.port}"
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--port", str(server.port), "--no-ui"],
                            env=server.env, cwd=server.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    statuses: dict[str, list[int]] = {"/health": [], "/query": []}
    try:
        deadline = time.monotonic() + 120
        warm = False
        while time.monotonic() < deadline and not warm:
            for path in statuses:
                try:
                    r = httpx.request("GET" if path == "/health" else "POST", server.url + path, timeout=30,
                                      json=None if path == "/health" else {"query": "Qdrant", "top_k": 3})
                except httpx.TransportError:
                    continue            # not listening yet
                statuses[path].append(r.status_code)
                if path == "/health" and r.status_code == 200:
                    body = r.json()
                    warm = body["searchable"] and not body["opening"] and len(statuses["/query"]) > 0
        assert warm, statuses
        assert statuses["/query"] and all(code != 500 for codes in statuses.values() for code in codes), statuses
        assert statuses["/query"][-1] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        server.ollama.stop()
