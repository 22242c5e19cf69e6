"""/health is answered while every request thread of the server is busy (searches of many clients, as in the
drill's rebuild case): it has a thread of its own and does not queue behind them. Checked as a state: the
answer arrives while the searches are still held."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_vault import imported_sample_vault

from mindnet.api import create_app
from mindnet.retrieval.search import GraphSearch
from mindnet.service import Mindnet

BOUND_S = 60     # no answer by then: it queued behind the held searches (they are held longer than this)


@pytest.fixture()
def settings(tmp_path: Path):
    with imported_sample_vault(tmp_path) as settings:
        yield settings


def _until(check, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_health_answers_while_every_request_thread_runs_a_search(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    release, held = threading.Event(), []
    real_search = GraphSearch.search

    def held_search(self, request):   # noqa: ANN001, ANN202 - the search's signature
        held.append(request)
        release.wait(BOUND_S * 2)
        return real_search(self, request)

    monkeypatch.setattr(GraphSearch, "search", held_search)
    workers = min(32, (os.cpu_count() or 1) + 4)      # the default executor's size (RequestThreads)
    app = Mindnet(settings)
    app.warm()
    answers: dict[str, object] = {}
    with TestClient(create_app(app)) as http:
        clients = [threading.Thread(target=lambda: http.post("/query", json={"query": "Qdrant", "top_k": 3}),
                                    daemon=True) for _ in range(workers + 2)]
        try:
            for c in clients:
                c.start()
            assert _until(lambda: len(held) >= workers, BOUND_S), f"only {len(held)} searches started"

            def probe() -> None:
                answers["health"] = http.get("/health")
            threading.Thread(target=probe, daemon=True).start()
            assert _until(lambda: "health" in answers, BOUND_S), "/health waited behind the searches"
            assert not release.is_set() and len(held) == workers      # answered while they were still held
            assert answers["health"].status_code == 200 and answers["health"].json()["status"] == "ok"
        finally:
            release.set()
            for c in clients:
                c.join(timeout=BOUND_S)
    app.close()
