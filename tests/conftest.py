"""Shared pytest fixtures. Each helper keeps its fixtures in its own delimited block."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# ============================================================================================
# BEGIN fake Ollama server (tests/fake_ollama.py)
# ============================================================================================
from fake_ollama import FakeOllama


@pytest.fixture
def fake_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOllama]:
    """A started :class:`FakeOllama` on 127.0.0.1:<free port>, stopped after the test.

    Point clients at ``fake_ollama.url``. Starting costs about a millisecond, so every test gets
    a fresh server: models {"nomic-embed-text", "phi3:mini"}, dim 64, no recorded requests.
    Loopback requests bypass any HTTP proxy configured in the environment.
    """
    no_proxy = ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY")]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    server = FakeOllama().start()
    try:
        yield server
    finally:
        server.stop()


# ============================================================================================
# END fake Ollama server
# ============================================================================================


# ============================================================================================
# BEGIN vault import (tests/helpers_vault.py)
# ============================================================================================
from helpers_vault import fake_settings, load_types  # noqa: E402

from mindnet.service import Mindnet  # noqa: E402
from mindnet.settings import TypesConfig  # noqa: E402


@pytest.fixture(scope="session")
def types_config() -> TypesConfig:
    """config/types.yaml, parsed once."""
    return load_types()


@pytest.fixture
def make_app(tmp_path, fake_ollama):
    """Factory for `Mindnet` objects importing with the fake Ollama into `tmp_path/qdrant` (prefix "t").

    Each call closes the previous app first (local Qdrant allows one client per folder); keyword arguments
    override settings fields.
    """
    apps: list[Mindnet] = []

    def make(**overrides: object) -> Mindnet:
        for app in apps:
            app.close()
        apps.clear()
        app = Mindnet(fake_settings(tmp_path, fake_ollama.url, **overrides))
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


# ============================================================================================
# END vault import
# ============================================================================================
