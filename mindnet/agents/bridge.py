"""`mindnet mcp` when a `mindnet serve` holds the index: a stdio MCP server that passes every request on to that
server's `/mcp`, so a desktop client that starts `mindnet mcp` works while the chat runs (an embedded index has
one process holding it; the server announces its URL in the index folder's holder file).

Everything is passed through as it is - tools, resources, prompts, results and tool errors - so the client sees
the server's own answers; an unreachable server is a tool error that says so.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server

from mindnet.agents.mcp_server import protocol_streams

TIMEOUT = httpx.Timeout(600.0, connect=10.0)    # a write re-imports the note before it answers


def bridge_server(remote: ClientSession, init: types.InitializeResult) -> Server:
    server: Server = Server("mindnet", version=init.serverInfo.version, instructions=init.instructions)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return (await remote.list_tools()).tools

    @server.call_tool(validate_input=False)      # the server checks the arguments
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await remote.call_tool(name, arguments)

    @server.list_resources()
    async def list_resources(request: types.ListResourcesRequest) -> types.ListResourcesResult:
        return await remote.list_resources(request.params.cursor if request.params else None)

    @server.list_resource_templates()
    async def list_templates() -> list[types.ResourceTemplate]:
        return (await remote.list_resource_templates()).resourceTemplates

    @server.read_resource()
    async def read_resource(uri: Any) -> list[ReadResourceContents]:
        result = await remote.read_resource(uri)
        return [ReadResourceContents(content=c.text if isinstance(c, types.TextResourceContents) else c.blob,
                                     mime_type=c.mimeType) for c in result.contents]

    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        return (await remote.list_prompts()).prompts

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        return await remote.get_prompt(name, arguments)

    return server


def run_bridge(url: str, *, token: str | None = None) -> int:
    """Serve stdio, passing each request to the streamable HTTP MCP server at `url`, until the client closes."""
    stdin, stdout = protocol_streams()
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> None:
        async with httpx.AsyncClient(headers=headers, timeout=TIMEOUT) as http, \
                streamable_http_client(url, http_client=http) as (read_remote, write_remote, _), \
                ClientSession(read_remote, write_remote) as remote:
            init = await remote.initialize()
            server = bridge_server(remote, init)
            async with stdio_server(stdin, stdout) as (read, write):
                await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
