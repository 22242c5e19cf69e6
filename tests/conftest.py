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
