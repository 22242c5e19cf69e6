"""mindnet as a Model Context Protocol server, on the official Python SDK (`mcp`, its low-level `Server`).

- Tools: `mindnet.agents.tools` (search, read_note, related, suggest_links, recent_changes; write_note,
  append_to_note and add_links unless read-only), each with its JSON schema, a description written for a model
  and annotations (read-only, or destructive: it may replace text, with a backup).
- Resources: every indexed note as `mindnet://note/<vault path>` (Markdown), listed in pages.
- Prompts: `answer_from_notes`, "answer from my notes and cite their paths".

Two transports over the same server: stdio (`mindnet mcp`, what desktop clients start) and streamable HTTP at
`/mcp` inside `mindnet serve` (`McpEndpoint`), where `mindnet.security.SecurityMiddleware` checks Host, Origin
and the bearer token in front of it, as for every other route.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError

from mindnet.agents.specs import tool_error
from mindnet.agents.tools import VaultTools
from mindnet.errors import MindnetError, NoteNotFoundError
from mindnet.settings import package_version

if TYPE_CHECKING:
    from mindnet.service import Mindnet

log = logging.getLogger(__name__)

NOTE_URI = "mindnet://note/"
PAGE = 500          # resources listed per page
INSTRUCTIONS = (
    "mindnet holds the user's personal notes (a Markdown vault) with typed links between them. Search before "
    "answering from memory; cite notes by their vault path; read a note before changing it and pass its version. "
    "Never write a note the user did not ask for.")
ANSWER_PROMPT = (
    "Answer the question below from my notes only. First call `search` (and `read_note` for the notes that "
    "matter; `related` for what they link to). Cite every note you use by its vault path in brackets, e.g. "
    "[concepts/qdrant.md]. If the notes do not answer it, say so instead of guessing.\n\nQuestion: {question}")


def build_server(tools: VaultTools) -> Server:
    """The MCP server over `tools` (one per process; stateless between calls)."""
    server: Server = Server("mindnet", version=package_version(), instructions=INSTRUCTIONS)
    public = _public(tools.mindnet)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=s.name, title=s.title, description=s.description, inputSchema=s.input_schema(),
                           annotations=types.ToolAnnotations(
                               title=s.title, readOnlyHint=not s.writes, destructiveHint=s.destructive,
                               idempotentHint=not s.writes, openWorldHint=False))
                for s in tools.specs]

    @server.call_tool(validate_input=False)      # the tool's own model checks it, with messages a model can use
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        try:
            data = await tools.call(name, arguments)
        except (MindnetError, ValidationError) as exc:
            log.info("tool %s refused: %s", name, exc)
            return types.CallToolResult(isError=True, content=[types.TextContent(
                type="text", text=tool_error(exc, public))])
        except Exception as exc:  # noqa: BLE001 - a bug: the log gets the traceback, the model one line
            log.error("tool %s failed", name, exc_info=exc)
            return types.CallToolResult(isError=True, content=[types.TextContent(
                type="text", text=f"internal error in {name} ({type(exc).__name__}); see the mindnet log")])
        text = json.dumps(data, ensure_ascii=False, default=str)
        return [types.TextContent(type="text", text=public(text))], data

    @server.list_resources()
    async def list_resources(request: types.ListResourcesRequest) -> types.ListResourcesResult:
        cursor = request.params.cursor if request.params else None
        start = int(cursor) if cursor and cursor.isdigit() else 0
        catalog = await tools.catalog()
        notes = sorted(catalog.notes.values(), key=lambda n: n.path)
        page = [types.Resource(uri=NOTE_URI + quote(n.path), name=n.path, title=n.title,
                               mimeType="text/markdown", description=f"{n.type} note '{n.title}'")
                for n in notes[start:start + PAGE]]
        more = start + PAGE < len(notes)
        return types.ListResourcesResult(resources=page, nextCursor=str(start + PAGE) if more else None)

    @server.list_resource_templates()
    async def list_templates() -> list[types.ResourceTemplate]:
        return [types.ResourceTemplate(uriTemplate=NOTE_URI + "{path}", name="note", mimeType="text/markdown",
                                       description="a note of the vault by its path, e.g. concepts/qdrant.md")]

    @server.read_resource()
    async def read_resource(uri: Any) -> list[ReadResourceContents]:
        text = str(uri)
        if not text.startswith(NOTE_URI):
            raise NoteNotFoundError(f"{text[:200]} is not a mindnet note; use {NOTE_URI}<vault path>")
        try:
            data = await tools.call("read_note", {"note": unquote(text[len(NOTE_URI):]), "max_chars": 500_000})
        except (MindnetError, ValidationError) as exc:      # the client gets the message, server paths hidden
            raise ValueError(tool_error(exc, public)) from None
        return [ReadResourceContents(content=data["markdown"], mime_type="text/markdown")]

    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        return [types.Prompt(name="answer_from_notes", title="Answer from my notes",
                             description="answer a question from the vault, citing the notes' paths",
                             arguments=[types.PromptArgument(name="question", description="the question",
                                                             required=True)])]

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        if name != "answer_from_notes":
            raise ValueError(f"no prompt {name!r}; the prompt is answer_from_notes")
        question = (arguments or {}).get("question", "").strip()
        if not question:
            raise ValueError("the prompt needs a question")
        return types.GetPromptResult(description="answer from the vault", messages=[types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=ANSWER_PROMPT.format(question=question)))])

    return server


def _public(mindnet: Mindnet):  # noqa: ANN202 - a str -> str function
    from mindnet.public_paths import public_text
    return lambda text: public_text(text, mindnet.settings)


# --------------------------------------------------------------------------- stdio


def protocol_streams() -> tuple[anyio.AsyncFile[str], anyio.AsyncFile[str]]:
    """This process's stdin and stdout for the protocol. From now on stdout carries only the protocol: anything
    else printing to it (a library, a warning, a C extension) goes to stderr instead."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return (anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")),
            anyio.wrap_file(TextIOWrapper(protocol, encoding="utf-8", write_through=True)))


def run_stdio(mindnet: Mindnet) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes it."""
    server = build_server(VaultTools(mindnet, source="mcp"))
    stdin, stdout = protocol_streams()

    async def main() -> None:
        async with stdio_server(stdin, stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


# --------------------------------------------------------------------------- streamable HTTP (in mindnet serve)


class McpEndpoint:
    """The ASGI endpoint `/mcp` of `mindnet serve`: stateless streamable HTTP with JSON answers (no session to
    keep or leak). The SDK's own Host/Origin check is off because `SecurityMiddleware` runs in front of every
    route with mindnet's rules (the same allowed hosts and origins, and the token)."""

    def __init__(self, mindnet: Mindnet) -> None:
        self.tools = VaultTools(mindnet, source="mcp")
        self.manager = StreamableHTTPSessionManager(
            app=build_server(self.tools), json_response=True, stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)
