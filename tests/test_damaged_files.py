"""Damaged files of the data folder (the vault is never touched): each is found, named with what is wrong, and
either repaired by the next `mindnet ingest` or answered with the exact command that repairs it; the server
starts anyway and says in /health what is damaged."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers_vault import fake_settings, import_vault, point_cli_at

from mindnet.api import create_app
from mindnet.cli import main
from mindnet.indexing.integrity import check_index
from mindnet.service import Mindnet
from mindnet.ui.threads import create_schema, threads_path

VAULT = {
    "a.md": "# Alpha\n\nAlpha plans with [[Beta]] and [[Gamma]].",
    "b.md": "# Beta\n\nBeta is linked from Alpha.",
    "c.md": "# Gamma\n\nGamma [[rel:depends_on Beta]].",
}


@pytest.fixture
def folder(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the vault, imported; the CLI's environment points at it."""
    settings = import_vault(tmp_path, fake_ollama.url, VAULT, log_dir=tmp_path / "logs")
    return point_cli_at(tmp_path, fake_ollama.url, settings, monkeypatch)


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def settings_of(folder: Path, url: str):
    return fake_settings(folder, url, log_dir=folder / "logs")


def test_a_deleted_collection_is_rebuilt_by_a_plain_ingest(folder: Path, capsys) -> None:
    shutil.rmtree(folder / "qdrant" / "t_notes")
    code, out = cli(capsys, "check")
    assert code == 1 and "missing_collections" in out and "run `mindnet ingest`" in out, out
    assert cli(capsys, "ingest")[0] == 0
    code, out = cli(capsys, "check")
    assert (code, "notes 3, chunks 3" in out, "index OK" in out) == (0, True, True), out


def test_a_server_says_a_deleted_collection_is_missing(folder: Path, fake_ollama) -> None:
    shutil.rmtree(folder / "qdrant" / "t_notes")
    mindnet = Mindnet(settings_of(folder, fake_ollama.url))
    try:
        mindnet.warm()
        body = TestClient(create_app(mindnet)).get("/health").json()
    finally:
        mindnet.close()
    assert body["status"] == "degraded", body
    assert any("the notes collection is missing" in p and "`mindnet ingest`" in p for p in body["problems"]), body


def garble_chunk_payloads(folder: Path) -> None:
    for page in (folder / "qdrant" / "t_chunks" / "segments").glob("*/payload_storage/*.dat"):
        with open(page, "r+b") as fh:
            fh.write(os.urandom(4096))


def test_a_garbled_collection_is_named_with_the_command_that_rebuilds_it(folder: Path, capsys) -> None:
    garble_chunk_payloads(folder)
    for command in ("check", "query"):
        code, out = cli(capsys, command, *(["Alpha"] if command == "query" else []))
        assert code == 2 and "Traceback" not in out, out
        assert "t_chunks: the chunks collection is damaged" in " ".join(out.split()), out
        assert "`mindnet ingest --full` rebuilds it" in " ".join(out.split()), out
    assert cli(capsys, "ingest", "--full")[0] == 0
    code, out = cli(capsys, "check")
    assert (code, "index OK" in out) == (0, True), out


def test_a_server_over_a_damaged_index_starts_and_says_what_is_damaged(folder: Path, fake_ollama) -> None:
    garble_chunk_payloads(folder)
    mindnet = Mindnet(settings_of(folder, fake_ollama.url))
    try:
        mindnet.warm()                      # what `serve` does in the background at start
        client = TestClient(create_app(mindnet))
        assert client.get("/health").json()["status"] == "ok"    # opening reads no payload: not found yet
        answer = client.post("/query", json={"query": "Alpha"})
        assert answer.status_code == 500 and "ingest --full" in answer.json()["detail"], answer.json()
        health = client.get("/health")
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "degraded", body
        assert any("the chunks collection is damaged" in p and "--full" in p for p in body["problems"]), body
        assert client.post("/ingest", json={"full": True}).status_code == 200
        assert client.get("/health").json()["problems"] == []
        assert client.post("/query", json={"query": "Alpha"}).status_code == 200
    finally:
        mindnet.close()


def test_a_garbled_embedding_cache_is_moved_aside_and_the_import_goes_on(folder: Path, fake_ollama) -> None:
    cache = folder / "cache" / "embeddings.sqlite"
    cache.write_bytes(os.urandom(8192))
    (folder / "vault" / "d.md").write_text("# Delta\n\nNew, so it is embedded.", encoding="utf-8")
    mindnet = Mindnet(settings_of(folder, fake_ollama.url))
    try:
        report = mindnet.ingest()
        assert (report.new, report.vectors_missing) == (1, 0)
        assert check_index(mindnet.store).broken is False
        [aside] = cache.parent.glob("embeddings.sqlite.damaged-*")
        assert any(aside.name in p and "started afresh" in p for p in mindnet.problems()), mindnet.problems()
    finally:
        mindnet.close()
    assert sqlite3.connect(cache).execute("SELECT count(*) FROM vectors").fetchone()[0] > 0   # a working cache


def test_a_garbled_conversations_file_does_not_stop_the_server(folder: Path, fake_ollama) -> None:
    settings = settings_of(folder, fake_ollama.url)
    path = create_schema(threads_path(settings.cache_dir))
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    assert create_schema(path) == path                       # serve's start: a fresh file, no exception
    assert sqlite3.connect(path).execute("SELECT count(*) FROM threads").fetchone() == (0,)
    [aside] = path.parent.glob("threads.sqlite.damaged-*")
    mindnet = Mindnet(settings)
    try:
        body = TestClient(create_app(mindnet)).get("/health").json()
    finally:
        mindnet.close()
    assert body["status"] == "degraded" and any(aside.name in p for p in body["problems"]), body


def test_a_truncated_index_file_is_named_in_health_until_an_import_writes_it_anew(folder: Path, fake_ollama) -> None:
    meta = folder / "qdrant" / "mindnet.json"
    os.truncate(meta, 10)
    mindnet = Mindnet(settings_of(folder, fake_ollama.url))
    try:
        mindnet.warm()
        client = TestClient(create_app(mindnet))
        body = client.get("/health").json()
        assert body["status"] == "degraded" and any(f"{meta} is damaged" in p for p in body["problems"]), body
        assert client.post("/ingest", json={}).status_code == 200
        assert client.get("/health").json()["problems"] == []
        assert check_index(mindnet.store).broken is False
    finally:
        mindnet.close()
