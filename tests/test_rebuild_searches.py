"""Searches during a full rebuild (`ingest --full` drops the index and writes every note again): each is refused
at once with 503 and Retry-After while phase 1 writes, never kept waiting for it nor answered from half an index;
and a rebuild killed half-way leaves an index that refuses searches as incomplete until an import finishes it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_process import kill_after_writes, run_child
from helpers_vault import fake_settings, import_vault

from mindnet.api import create_app
from mindnet.errors import IndexRebuildingError
from mindnet.indexing.integrity import check_index
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet

VAULT = {f"n{i:02}.md": f"# Note {i}\n\nText of note {i}, linked to [[n{(i + 1) % 40:02}]]." for i in range(40)}


@pytest.fixture
def imported(tmp_path: Path, fake_ollama) -> Path:
    import_vault(tmp_path, fake_ollama.url, VAULT)
    return tmp_path


def test_a_search_during_a_rebuild_is_refused_at_once_with_retry_after(imported: Path, fake_ollama) -> None:
    mindnet = Mindnet(fake_settings(imported, fake_ollama.url, log_dir=imported / "logs"))
    client = TestClient(create_app(mindnet))
    assert client.post("/query", json={"query": "Note 3"}).status_code == 200
    inside, release = threading.Event(), threading.Event()

    def held(done: int, total: int, phase: str) -> None:   # phase 1 of the rebuild, the index lock held
        if phase != "embedding" and not inside.is_set():
            inside.set()
            release.wait(60)

    rebuild = threading.Thread(target=lambda: mindnet.ingest(full=True, progress=held))
    rebuild.start()
    try:
        assert inside.wait(60), "the rebuild never reported progress"
        answers = [client.post("/query", json={"query": "Note 3"}) for _ in range(3)]
        # answered while the rebuild still holds the index: a search that waited could not have returned
        assert mindnet.importer.rebuilding and not release.is_set()
        assert [a.status_code for a in answers] == [503] * 3, [a.json() for a in answers]
        body = answers[0].json()
        assert body["error"] == "IndexRebuildingError" and "full rebuild of the index is running" in body["detail"]
        assert int(answers[0].headers["Retry-After"]) >= 5
        assert client.get("/health").status_code == 200
    finally:
        release.set()
        rebuild.join(120)
    try:
        hits = client.post("/query", json={"query": "Note 3"}).json()["hits"]
        assert hits and check_index(mindnet.store).broken is False
        assert mindnet.counts()["notes"] == 40
    finally:
        mindnet.close()


def test_a_rebuild_killed_half_way_refuses_searches_until_an_import_finishes_it(imported: Path,
                                                                                   fake_ollama) -> None:
    settings = fake_settings(imported, fake_ollama.url, log_dir=imported / "logs")

    def child() -> None:
        # the writes of a rebuild: drop, create, the token, then the notes; killed after the 8th
        kill_after_writes(8)
        app = Mindnet(settings)
        app.ingest(full=True)
        os._exit(0)

    assert run_child(child) == -9
    app = Mindnet(settings)
    try:
        assert 0 < app.store.count("notes") < 40        # half an index
        with pytest.raises(IndexRebuildingError, match="is incomplete: a full rebuild stopped"):
            app.query(QueryRequest(query="Note 3"))
        report = check_index(app.store)
        assert report.broken and "full rebuild" in report.unfinished_import[0], report
        app.ingest()                                    # a plain import finishes it
        assert app.store.count("notes") == 40 and check_index(app.store).broken is False
        assert app.query(QueryRequest(query="Note 3"))["hits"]
    finally:
        app.close()
