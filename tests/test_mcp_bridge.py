"""`mindnet mcp` while `mindnet serve` holds the index: a desktop client starts `mindnet mcp`, which finds the
embedded index held by the server (one process at a time) and passes every call on to the server's `/mcp`, so
the agent works beside the chat and sees what the server sees - including a note it writes itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from helpers_ui import ChatServer
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT = timedelta(seconds=180)     # a busy 2-core machine: the server may still be opening its index


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    s = ChatServer(tmp_path_factory.mktemp("bridge")).start()
    try:
        yield s
    finally:
        s.stop()


def _stdio(server: ChatServer) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mindnet.cli", "mcp"], env=server.env,
                                 cwd=str(server.root))


async def _session_calls(server: ChatServer, calls: list[tuple[str, dict]]) -> list:
    results = []
    async with stdio_client(_stdio(server)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        results.append(sorted(t.name for t in (await session.list_tools()).tools))
        for name, args in calls:
            results.append(await session.call_tool(name, args, read_timeout_seconds=TIMEOUT))
        results.append(await session.read_resource("mindnet://note/concepts/qdrant.md"))
    return results


def test_mcp_passes_calls_to_the_server_that_holds_the_index(server: ChatServer) -> None:
    holder = json.loads((Path(server.root) / "qdrant" / "mindnet.pid").read_text())
    assert holder["url"] == server.url           # the server said where it answers

    note = "---\ntitle: Brückennotiz\ntype: concept\n---\n# Brückennotiz\n\nZitronenfalter über [[Qdrant]].\n"
    tools, search, written, found, refused, resource = anyio.run(_session_calls, server, [
        ("search", {"query": "Warum Qdrant?", "top_k": 5}),
        ("write_note", {"markdown": note}),
        ("search", {"query": "Zitronenfalter Brückennotiz", "top_k": 3}),
        ("read_note", {"note": "Qdrnt"}),
    ])
    assert "search" in tools and "write_note" in tools
    assert not search.isError, search.content[0].text
    assert "concepts/qdrant.md" in [h["path"] for h in search.structuredContent["hits"]]
    assert not written.isError, written.content[0].text
    path = written.structuredContent["path"]
    assert (server.vault / path).is_file()
    # the server imported the note before answering: the next call finds it
    assert path in [h["path"] for h in found.structuredContent["hits"]]
    links = written.structuredContent["links_out"]
    assert any(link["resolved"] and link["path"] == "concepts/qdrant.md" for link in links)
    # the server's own tool error comes through as a tool error, naming the closest note
    assert refused.isError and "qdrant" in refused.content[0].text.lower()
    assert "Qdrant ist eine Open-Source-Vektordatenbank" in resource.contents[0].text
    # the calls were the server's: its search history has them, marked as coming from MCP
    sources = [r["source"] for r in server.records("search_history.jsonl")]
    assert sources.count("mcp") >= 4
