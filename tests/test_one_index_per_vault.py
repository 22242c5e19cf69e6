"""One index per vault (issue 25, item 2): an index records the vault it was built from, and a forgotten variable
or a wrong vault argument never replaces it. Importing another vault into it (ingest, serve, watch, the API) is
refused naming both vaults and the way out; an import that would delete more than half of the index's notes asks
first (`--yes` for scripts, `confirm_deletes` in the API), and the live index of `mindnet serve` never does so on
its own. Nothing is written by a refused import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fake_ollama import FakeOllama
from helpers_ui import free_port
from helpers_vault import copy_sample_vault, fake_settings

from mindnet.errors import MassDeleteError, VaultMismatchError
from mindnet.live import LiveIndex
from mindnet.service import Mindnet

OTHER = {f"other/n{i}.md": f"# Andere Notiz {i}\n\nText der anderen Notiz {i}.\n" for i in range(4)}


def _vaults(tmp: Path) -> tuple[Path, Path]:
    a = copy_sample_vault(tmp / "vault")
    b = tmp / "other-vault"
    for rel, text in OTHER.items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text, encoding="utf-8")
    return a, b


def _counts(settings) -> dict[str, int]:
    app = Mindnet(settings)
    try:
        return app.counts()
    finally:
        app.close()


def _env(tmp: Path, server: FakeOllama, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDNET_")}
    env.update({"MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": server.url,
                "MINDNET_QDRANT_PATH": str(tmp / "qdrant"), "MINDNET_CACHE_DIR": str(tmp / "cache"),
                "MINDNET_LOG_DIR": str(tmp / "logs"), "MINDNET_COLLECTION_PREFIX": "t",
                "NO_PROXY": "127.0.0.1,localhost"}, **extra)
    return env


def _cli(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mindnet.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_another_vault_is_refused_and_the_index_stays(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    a, b = _vaults(tmp_path)
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=a)
    app = Mindnet(settings)
    try:
        app.ingest()
        assert app.recorded_vault() == str(a.resolve())
        before = app.counts()
        with pytest.raises(VaultMismatchError) as refused:
            app.ingest(b)
        assert app.counts() == before           # nothing was written
    finally:
        app.close()
    message = str(refused.value)
    assert str(a.resolve()) in message and str(b.resolve()) in message
    assert "--index" in message and "MINDNET_QDRANT_PATH" in message and "--full" in message
    # another index for the other vault: both stay
    other = fake_settings(tmp_path, fake_ollama.url, vault_root=b, qdrant_path=tmp_path / "qdrant-other")
    app = Mindnet(other)
    try:
        assert app.ingest().new == len(OTHER)
    finally:
        app.close()
    assert _counts(settings) == before


def test_the_cli_refuses_ingest_serve_and_watch_of_another_vault(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    a, b = _vaults(tmp_path)      # b: the user's vault; a: a copy of the bundled sample vault
    env = _env(tmp_path, fake_ollama, MINDNET_VAULT_ROOT=str(b))
    assert _cli(env, "ingest", "--json", cwd=tmp_path).returncode == 0
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=b, collection_prefix="t")
    before = _counts(settings)

    wrong = _cli(env, "ingest", str(a), cwd=tmp_path)
    assert wrong.returncode == 2 and "was built from the vault" in wrong.stderr
    # serve started without MINDNET_VAULT_ROOT (the bundled sample vault): refused before it imports anything
    no_vault = {k: v for k, v in env.items() if k != "MINDNET_VAULT_ROOT"}
    serve = _cli(no_vault, "serve", "--port", str(free_port()), "--no-ui", cwd=tmp_path)
    assert serve.returncode == 2 and "was built from the vault" in serve.stderr
    watch = _cli(env, "watch", str(a), cwd=tmp_path)
    assert watch.returncode == 2 and "--index" in watch.stderr
    assert _counts(settings) == before
    # --index gives the other vault its own index
    own = _cli(env, "ingest", str(a), "--index", str(tmp_path / "qdrant-a"), "--json", cwd=tmp_path)
    assert own.returncode == 0, own.stderr
    assert (tmp_path / "qdrant-a").is_dir()
    # a rebuild from the other vault is the explicit way to replace it; the index then belongs to that vault
    assert _cli(env, "ingest", str(a), "--full", "--json", cwd=tmp_path).returncode == 0
    app = Mindnet(settings)
    try:
        assert app.recorded_vault() == str(a.resolve())
    finally:
        app.close()


def test_a_moved_vault_is_followed(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    a, _ = _vaults(tmp_path)
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=a)
    app = Mindnet(settings)
    try:
        app.ingest()
    finally:
        app.close()
    moved = tmp_path / "moved-vault"
    shutil.move(a, moved)
    app = Mindnet(settings.model_copy(update={"vault_root": moved}))
    try:
        report = app.ingest()
        assert report.deleted == 0 and app.recorded_vault() == str(moved.resolve())
    finally:
        app.close()


def test_deleting_most_of_the_index_asks_first(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    a, _ = _vaults(tmp_path)
    env = _env(tmp_path, fake_ollama, MINDNET_VAULT_ROOT=str(a))
    assert _cli(env, "ingest", "--json", cwd=tmp_path).returncode == 0
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=a, collection_prefix="t")
    before = _counts(settings)
    notes = sorted(a.rglob("*.md"))
    for path in notes[: len(notes) * 2 // 3]:    # an unmounted folder or a wrong sync looks like this
        path.unlink()

    refused = _cli(env, "ingest", cwd=tmp_path)    # not a terminal: no answer, so no
    assert refused.returncode == 2, refused.stdout + refused.stderr
    text = refused.stderr
    assert "would delete" in text and "--yes" in text
    assert _counts(settings) == before

    confirmed = _cli(env, "ingest", "--yes", "--json", cwd=tmp_path)
    assert confirmed.returncode == 0, confirmed.stderr
    assert _counts(settings)["notes"] < before["notes"]


def test_the_live_index_and_the_api_never_mass_delete_on_their_own(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    a, _ = _vaults(tmp_path)
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=a)
    app = Mindnet(settings)
    try:
        app.ingest()
        before = app.counts()
        notes = sorted(a.rglob("*.md"))
        for path in notes[: len(notes) * 2 // 3]:
            path.unlink()
        live = LiveIndex(app, watch=False).start(catch_up=True)
        try:
            assert live.wait_idle(timeout=120)
        finally:
            live.stop()
        assert live.error and "would delete" in live.error
        assert app.counts() == before
        with pytest.raises(MassDeleteError):
            app.ingest()
        report = app.ingest(confirm_deletes=lambda deleting, indexed: deleting < indexed)
        assert report.deleted > 0
    finally:
        app.close()


def test_the_api_asks_for_confirm_deletes(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    from fastapi.testclient import TestClient

    from mindnet.api import create_app
    a, _ = _vaults(tmp_path)
    settings = fake_settings(tmp_path, fake_ollama.url, vault_root=a)
    app = Mindnet(settings)
    try:
        app.ingest()
        notes = sorted(a.rglob("*.md"))
        for path in notes[: len(notes) * 2 // 3]:
            path.unlink()
        with TestClient(create_app(app), base_url="http://127.0.0.1") as client:
            refused = client.post("/ingest", json={})
            assert refused.status_code == 409 and "would delete" in refused.json()["detail"]
            done = client.post("/ingest", json={"confirm_deletes": True})
            assert done.status_code == 200 and done.json()["deleted"] > 0
    finally:
        app.close()


def test_health_of_a_refused_serve_is_never_reached(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """The refusal comes before the server listens: nothing answers on its port."""
    _, b = _vaults(tmp_path)
    env = _env(tmp_path, fake_ollama, MINDNET_VAULT_ROOT=str(b))
    assert _cli(env, "ingest", "--json", cwd=tmp_path).returncode == 0
    port = free_port()
    no_vault = {k: v for k, v in env.items() if k != "MINDNET_VAULT_ROOT"}
    assert _cli(no_vault, "serve", "--port", str(port), "--no-ui", cwd=tmp_path).returncode == 2
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
