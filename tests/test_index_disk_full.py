"""A full disk under the embedded index. Qdrant Edge writes through memory maps: on a full disk the process would
die of SIGBUS mid-write (`serve` included) and leave a damaged collection. mindnet keeps MINDNET_MIN_FREE_MB free:
a write that would go below it is not made, the import stops with one message that names the disk and the fix,
the index stays as the last complete write left it, and the next import after space is freed finishes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_disk import fill, tmpfs
from helpers_vault import fake_settings, import_vault

from mindnet.errors import DataWriteError
from mindnet.indexing.integrity import check_index
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.settings import SAMPLE_VAULT
from mindnet.store.space import MB, free_bytes

VAULT = {"a.md": "# Alpha\n\nAlpha links [[Beta]].", "b.md": "# Beta\n\nBeta text.", "c.md": "# Gamma\n\nGamma."}


def test_an_import_below_the_free_space_limit_stops_and_the_next_one_finishes(tmp_path: Path, fake_ollama) -> None:
    """The limit set above the disk's free space: the same stop a nearly full disk gives, without a mount."""
    import_vault(tmp_path, fake_ollama.url, VAULT)
    (tmp_path / "vault" / "d.md").write_text("# Delta\n\nDelta links [[Alpha]].", encoding="utf-8")
    (tmp_path / "vault" / "b.md").write_text("# Beta\n\nBeta text, changed.", encoding="utf-8")
    above = free_bytes(tmp_path) / MB + 1024
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, min_free_mb=above))
    try:
        with pytest.raises(DataWriteError) as stop:
            app.ingest()
        message = " ".join(str(stop.value).split())
        assert f"{tmp_path / 'qdrant'}: the disk has" in message and "MINDNET_MIN_FREE_MB" in message
        assert "free some space on that disk, then run `mindnet ingest`" in message
        hits = app.query(QueryRequest(query="Alpha", mode="hybrid"))["hits"]    # searches go on
        assert hits and {h["title"] for h in hits} >= {"a"}, hits
        report = check_index(app.store)
        assert report.unfinished_import and not (report.dangling_edges or report.orphan_chunks), report
        assert any("MINDNET_MIN_FREE_MB" in p for p in app.problems())
    finally:
        app.close()
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, min_free_mb=0))
    try:
        report = app.ingest()
        assert check_index(app.store).broken is False
        assert sorted(r.payload["path"] for r in app.store.scroll("notes")) == ["a.md", "b.md", "c.md", "d.md"]
    finally:
        app.close()


CLI = [sys.executable, "-m", "mindnet.cli"]


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)


def test_a_nearly_full_disk_stops_the_import_before_the_engine_meets_it(tmp_path: Path, fake_ollama) -> None:
    """A real small file system (tmpfs, where even reading a hole through a map takes a page): the import stops
    with a message, never dies of SIGBUS, and `check` and `query` answer; with space freed, `ingest` finishes."""
    data = tmp_path / "data"
    with tmpfs(data, 400 * 1024, without="test_an_import_below_the_free_space_limit_stops_and_the_next_one_"
                                          "finishes"):
        filler = fill(data, leave=int(275 * MB))        # 256 MB kept free (the default), 19 MB to write into
        env = {**os.environ, "MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": fake_ollama.url,
               "MINDNET_VAULT_ROOT": str(SAMPLE_VAULT), "MINDNET_QDRANT_PATH": str(data / "qdrant"),
               "MINDNET_CACHE_DIR": str(data / "cache"), "MINDNET_LOG_DIR": str(data / "logs"),
               "MINDNET_QDRANT_URL": "", "COLUMNS": "200", "RUST_BACKTRACE": "0"}
        first = run(["ingest"], env)
        assert first.returncode == 2, (first.returncode, first.stderr[-2000:])       # not -7 (SIGBUS)
        assert "MINDNET_MIN_FREE_MB" in first.stderr and "Traceback" not in first.stderr, first.stderr[-2000:]
        for args in (["check"], ["query", "Qdrant"]):
            done = run(args, env)
            assert done.returncode in (0, 1, 2) and "Traceback" not in done.stdout + done.stderr, \
                (args, done.returncode, done.stderr[-2000:])
        filler.unlink()
        assert run(["ingest"], env).returncode == 0
        check = run(["check"], env)
        assert (check.returncode, "index OK" in check.stdout) == (0, True), check.stdout[-2000:]
