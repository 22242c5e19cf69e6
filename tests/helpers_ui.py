"""A real `mindnet serve` (HTTP API + Chainlit chat at /ui) on a copy of the sample vault, with a fake Ollama.

Shared by the socket and the browser tests of the chat UI: one server per test module.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from fake_ollama import FakeOllama

from mindnet.settings import SAMPLE_VAULT

ANSWER = "Du hast Qdrant gewählt, weil es lokal läuft [1], hybride Suche kann und den Graphen trägt [2]."
# a note whose title is Markdown and HTML, with a word far wider than the chat column
ODD_TITLE = "**Fett** <i>kursiv</i> [tot](javascript:alert(1)) Überlangeswortohneleerzeichen" + "x" * 120
ODD_NOTE = f"""---
title: "{ODD_TITLE}"
type: concept
---
# Seltsamer Titel

Zitronenmelisse Seltsamkeit: dieser Titel ist Markdown und HTML und muss als Text erscheinen.
"""
DRAFT_REPLY = """Hier ist der Entwurf deiner Notiz:
```markdown
---
type: project
title: Kräutergarten
status: aktiv
goal: Frische Kräuter vom Balkon ernten
tags: [garten]
---
# Kräutergarten

## Ziel
Frische Kräuter vom Balkon ernten.

## Hintergrund
Basilikum und Minze in Kästen.
```"""


def scripted_chat(messages: list[dict[str, Any]]) -> str:
    """The router LLM says DECISION, interview prompts get a finished project note, anything else ANSWER."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if "Du bist der Router" in text:
        return "DECISION"
    return DRAFT_REPLY if "Interview" in text else ANSWER


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChatServer:
    """`mindnet ingest` then `mindnet serve` in a subprocess; `stop()` sends SIGTERM."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.vault = self.root / "vault"
        self.log_dir = self.root / "logs"
        self.ollama = FakeOllama().start()
        self.ollama.chat_fn = scripted_chat
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": self.ollama.url,
            "MINDNET_QDRANT_PATH": str(self.root / "qdrant"), "MINDNET_CACHE_DIR": str(self.root / "cache"),
            "MINDNET_LOG_DIR": str(self.log_dir), "MINDNET_VAULT_ROOT": str(self.vault),
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        })
        env.pop("CHAINLIT_APP_ROOT", None)
        return env

    def start(self, timeout: float = 120.0, extra_notes: dict[str, str] | None = None, ingest: bool = True
              ) -> ChatServer:   # a generous timeout: 2 cores shared by many processes
        shutil.copytree(SAMPLE_VAULT, self.vault, dirs_exist_ok=True)   # the vault may be a mount point
        for name, text in (extra_notes or {}).items():
            (self.vault / name).write_text(text, encoding="utf-8")
        cli = [sys.executable, "-m", "mindnet.cli"]
        if ingest:
            subprocess.run([*cli, "ingest", "--json"], env=self.env, cwd=self.root, check=True,
                           capture_output=True, timeout=timeout)
        self.stderr = open(self.root / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        self.port = free_port()            # chosen again after the import: another process may have taken it
        self.url = f"http://127.0.0.1:{self.port}"
        # without `ingest` the index stays empty: the server must not import by itself (the UI's "Import now")
        serve = [*cli, "serve", "--port", str(self.port)] + ([] if ingest else ["--no-import", "--no-watch"])
        self.proc = subprocess.Popen(serve, env=self.env, cwd=self.root, stdout=self.stderr,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mindnet serve exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"mindnet serve did not answer /health within {timeout} s: {self.log()}")

    def log(self) -> str:
        path = self.root / "serve.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.stderr.close()
        self.ollama.stop()

    def feedback_report(self) -> dict[str, Any]:
        from mindnet.logs import FlywheelLogs
        return FlywheelLogs(self.log_dir).feedback_report()

    def wait_answers_stored(self, thread_id: str, count: int, *, timeout: float = 60.0) -> None:
        """Until the thread store holds `count` whole answers of the thread: Chainlit writes the last update of a
        streamed answer (its whole text and mindnet's metadata) in a task of its own, after the page shows it."""
        import sqlite3
        from urllib.parse import quote
        path = self.root / "threads.sqlite"           # beside the cache folder (mindnet.ui.threads)
        query = ("SELECT COUNT(*) FROM steps WHERE threadId = ? AND type = 'assistant_message'"
                 " AND output LIKE ? AND metadata LIKE ?")
        deadline, stored = time.monotonic() + timeout, 0
        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=5) as db:
                    stored = db.execute(query, (thread_id, f"%{ANSWER[-25:]}%", "%mindnet_turn%")).fetchone()[0]
            except sqlite3.OperationalError:        # not created yet, or busy
                stored = 0
            if stored >= count:
                return
            time.sleep(0.1)
        raise AssertionError(f"the thread store holds {stored} whole answers of thread {thread_id}, not {count}, "
                             f"after {timeout:.0f} s")

    def records(self, name: str) -> list[dict[str, Any]]:
        import json
        path = self.log_dir / name
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# --------------------------------------------------------------------------- a first run (the import strip)

def generated_notes(count: int) -> dict[str, str]:
    """`count` small notes (a few chunks each) that make an import take a while: vault-relative path -> text."""
    notes = {}
    for i in range(count):
        body = "\n\n".join(f"## Abschnitt {k}\n\nNotiz {i} Abschnitt {k}: Gartenarbeit, Kompost und Beete, "
                           f"Eintrag {i * 7 + k}." for k in range(3))
        head = f"---\ntitle: Notiz {i:03d}\ntype: concept\n---\n# Notiz {i:03d}\n\n"
        notes[f"generated/notiz-{i:03d}.md"] = f"{head}{body}\n"
    return notes


class FreshVaultServer(ChatServer):
    """`mindnet serve` on a vault never imported: the server imports it itself (and watches it), as on a first
    run. `latency` makes every call of the fake Ollama (embeddings included) take that long."""

    def __init__(self, root: Path, *, latency: float = 0.0) -> None:
        super().__init__(root)
        self.ollama.latency = latency
        self.started_at = 0.0    # time.monotonic() when `mindnet serve` was started

    def start(self, timeout: float = 120.0, extra_notes: dict[str, str] | None = None, ingest: bool = False
              ) -> FreshVaultServer:
        shutil.copytree(SAMPLE_VAULT, self.vault, dirs_exist_ok=True)
        for name, text in (extra_notes or {}).items():
            (self.vault / name).parent.mkdir(parents=True, exist_ok=True)
            (self.vault / name).write_text(text, encoding="utf-8")
        self.stderr = open(self.root / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--port", str(self.port)],
                                     env=self.env, cwd=self.root, stdout=self.stderr, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mindnet serve exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"mindnet serve did not answer /health within {timeout} s: {self.log()}")

    def health(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/health", timeout=30).json()
