"""MCP over streamable HTTP at /mcp of a real `mindnet serve` (tests/helpers_ui.py), talked to with the MCP SDK's
own client (`streamable_http_client`): the tools, a write the next call finds, a refused overwrite, the security
checks in front of /mcp (Host, Origin, the bearer token), and a tool call answered while a chat is streaming."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
from helpers_ui import ChatServer, scripted_chat
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

CALL_S = 120.0                   # one request on 2 busy cores
TOKEN = "mcp-test-token-4711"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class TokenServer(ChatServer):
    """`mindnet serve` with MINDNET_API_TOKEN set."""

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "MINDNET_API_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("mcp_http"))
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = TokenServer(tmp_path_factory.mktemp("mcp_http_token"))
    try:
        yield srv.start()
    finally:
        srv.stop()


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session to `<url>/mcp`."""
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(CALL_S), trust_env=False) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _):
            async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=CALL_S)) as session:
                await session.initialize()
                yield session


def ok(result: types.CallToolResult) -> dict[str, Any]:
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert not result.isError, text
    assert result.structuredContent is not None and json.loads(text) == result.structuredContent
    return result.structuredContent


def refused(result: types.CallToolResult) -> str:
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert result.isError, f"the call was not refused: {text[:500]}"
    assert text.strip() and "Traceback" not in text, text
    return text


def raw_post(server: ChatServer, **headers: str) -> httpx.Response:
    """An MCP initialize request as any HTTP client (or a web page) can send it."""
    return httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=CALL_S,
                      trust_env=False)


def statuses(exc: BaseException) -> set[int]:
    """The HTTP statuses of every httpx.HTTPStatusError inside `exc` (exception groups, causes, contexts)."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, httpx.HTTPStatusError):
            found.add(e.response.status_code)
        if isinstance(e, BaseExceptionGroup):
            stack.extend(e.exceptions)
        stack.extend([e.__cause__, e.__context__])
    return found


# --------------------------------------------------------------------------- tools


async def test_lists_the_tools_and_searches(server: ChatServer) -> None:
    async with mcp_session(server.url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"search", "read_note", "related", "suggest_links", "recent_changes", "write_note",
                              "append_to_note", "add_links"}
        assert tools["write_note"].annotations.destructiveHint is True
        assert tools["search"].annotations.readOnlyHint is True
        found = ok(await session.call_tool("search", {"query": "Warum Qdrant?"}))
        hit = next(h for h in found["hits"] if h["path"] == "concepts/qdrant.md")
        assert "Qdrant" in hit["passage"] and hit["reason"]
        note = ok(await session.call_tool("read_note", {"note": "Qdrant DB"}))
        assert note["path"] == "concepts/qdrant.md" and note["links_in"] and note["links_out"]
        assert "closest" in refused(await session.call_tool("read_note", {"note": "Qdrnt"}))
        (resource,) = (await session.read_resource("mindnet://note/concepts/qdrant.md")).contents
        assert resource.text == (server.vault / "concepts/qdrant.md").read_text(encoding="utf-8")
    records = {r["query_id"]: r for r in server.records("search_history.jsonl")}
    assert records[found["query_id"]]["source"] == "mcp"
    assert records[note["query_id"]]["source"] == "mcp"


async def test_a_written_note_is_found_by_the_next_call_and_an_overwrite_needs_its_version(
        server: ChatServer) -> None:
    markdown = ("---\ntitle: Wendehals Notiz\ntype: concept\n---\n# Wendehals Notiz\n\n"
                "Der Wendehals dreht den Kopf wie eine Schlange. Siehe [[BM25]].\n")
    async with mcp_session(server.url) as session:
        written = ok(await session.call_tool("write_note", {"markdown": markdown}))
    path = server.vault / written["path"]
    assert written["path"] == "concepts/Wendehals Notiz.md" and path.is_file() and written["searchable"]
    assert [(link["path"], link["resolved"]) for link in written["links_out"]] == [("concepts/bm25.md", True)]
    old = path.read_bytes()

    async with mcp_session(server.url) as session:           # a new connection: nothing kept between calls
        found = ok(await session.call_tool("search", {"query": "Wendehals dreht den Kopf"}))
        assert found["hits"][0]["path"] == written["path"]
        text = refused(await session.call_tool("write_note", {"markdown": markdown.replace("Schlange", "Eule")}))
        assert written["version"] in text and "replaces" in text and str(server.root) not in text
        assert path.read_bytes() == old
        replaced = ok(await session.call_tool("write_note", {
            "markdown": markdown.replace("Schlange", "Eule"), "overwrite": True, "replaces": written["version"]}))
    assert replaced["backup"] and (server.vault / replaced["backup"]).read_bytes() == old
    assert "Eule" in path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- who may call /mcp


def test_a_foreign_origin_is_refused(server: ChatServer) -> None:
    assert raw_post(server).status_code == 200                       # the same request without it is answered
    assert raw_post(server, Origin=server.url).status_code == 200     # and from the server's own pages
    r = raw_post(server, Origin="http://evil.example")
    assert r.status_code == 403 and r.json()["error"] == "origin not allowed"
    assert "result" not in r.text


def test_a_foreign_host_is_refused(server: ChatServer) -> None:
    assert raw_post(server, Host=f"localhost:{server.port}").status_code == 200
    r = raw_post(server, Host="evil.example")                        # DNS rebinding: a name re-pointed at us
    assert r.status_code == 400 and r.json()["error"] == "host not allowed"
    assert "result" not in r.text


async def test_with_a_token_set_mcp_needs_it(token_server: ChatServer) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        r = raw_post(token_server, **headers)
        assert r.status_code == 401 and r.json()["error"] == "token required", headers
    with pytest.raises(Exception) as info:          # noqa: B017 - the SDK's error: its HTTP status is checked
        async with mcp_session(token_server.url):
            pass
    assert statuses(info.value) == {401}, info.value

    assert raw_post(token_server, Authorization=f"Bearer {TOKEN}").status_code == 200
    async with mcp_session(token_server.url, headers={"Authorization": f"Bearer {TOKEN}"}) as session:
        assert len((await session.list_tools()).tools) == 8
        found = ok(await session.call_tool("search", {"query": "Warum Qdrant?"}))
        assert "concepts/qdrant.md" in [h["path"] for h in found["hits"]]


# --------------------------------------------------------------------------- during a chat


async def test_a_tool_call_is_answered_while_a_chat_is_streaming(server: ChatServer) -> None:
    """The chat's answer is held inside its LLM call (the fake Ollama waits for `release`); the MCP search must
    answer meanwhile: nothing it needs (the index, the event loop, the embedder) may wait for the chat."""
    mark = "Zitronenfalter"
    answering, release = threading.Event(), threading.Event()

    def chat_fn(messages: list[dict[str, Any]]) -> str:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        if mark in text and "Du bist der Router" not in text:
            answering.set()
            release.wait(CALL_S)
            return "Qdrant läuft lokal [1]."
        return scripted_chat(messages)

    events: list[dict[str, Any]] = []
    first_event, finished = threading.Event(), threading.Event()

    def chat() -> None:
        try:
            with httpx.stream("POST", f"{server.url}/chat/stream", json={"message": f"Was ist Qdrant? {mark}"},
                              timeout=CALL_S, trust_env=False) as response:
                for line in response.iter_lines():
                    if line.strip():
                        events.append(json.loads(line))
                        first_event.set()
        finally:
            finished.set()

    server.ollama.chat_fn = chat_fn
    thread = threading.Thread(target=chat, name="chat-stream", daemon=True)
    try:
        thread.start()
        assert await asyncio.to_thread(answering.wait, CALL_S), "the chat never asked the LLM for its answer"
        assert await asyncio.to_thread(first_event.wait, CALL_S), "the chat stream sent nothing before its answer"
        async with mcp_session(server.url) as session:
            found = ok(await session.call_tool("search", {"query": "Hybride Suche mit BM25"}))
            note = ok(await session.call_tool("read_note", {"note": "concepts/bm25.md"}))
        assert not finished.is_set(), "the chat ended before the MCP calls returned: they waited for it"
        assert "concepts/bm25.md" in [h["path"] for h in found["hits"]] and note["path"] == "concepts/bm25.md"
    finally:
        release.set()
        thread.join(CALL_S)
        server.ollama.chat_fn = scripted_chat
    kinds = [e["kind"] for e in events]
    assert kinds[-1] == "done" and "token" in kinds, kinds
    assert "".join(e["data"]["text"] for e in events if e["kind"] == "token").startswith("Qdrant läuft lokal")
