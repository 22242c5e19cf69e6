"""The agent tools as LlamaIndex `FunctionTool`s, for an agent in the user's own pipeline (no MCP needed):

    from llama_index.core.agent.workflow import FunctionAgent
    from mindnet.agents import mindnet_tools
    agent = FunctionAgent(tools=mindnet_tools(), llm=my_llm)

Each tool takes the same arguments (its `fn_schema` is the tool's input model) and returns the same JSON as over
MCP; a call the model should change returns {"error": "..."} with what to do, so the agent can try again.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from llama_index.core.tools import FunctionTool, ToolMetadata
from pydantic import ValidationError

from mindnet.agents.specs import ToolSpec, tool_error
from mindnet.agents.tools import VaultTools
from mindnet.errors import MindnetError

if TYPE_CHECKING:
    from mindnet.service import Mindnet


def mindnet_tools(mindnet: Mindnet | None = None, *, read_only: bool | None = None) -> list[FunctionTool]:
    """search, read_note, related, suggest_links, recent_changes and (unless `read_only`, default
    MINDNET_MCP_READ_ONLY) write_note, append_to_note and add_links over `mindnet` (default:
    `Mindnet.from_env()`, the MINDNET_* settings), logged as coming from an agent."""
    if mindnet is None:
        from mindnet.service import Mindnet
        mindnet = Mindnet.from_env()
    tools = VaultTools(mindnet, source="agent", read_only=read_only)
    return [_function_tool(tools, spec) for spec in tools.specs]


def _function_tool(tools: VaultTools, spec: ToolSpec) -> FunctionTool:
    async def acall(**kwargs: Any) -> str:
        try:
            data = await tools.call(spec.name, kwargs)
        except (MindnetError, ValidationError) as exc:
            return json.dumps({"error": tool_error(exc)}, ensure_ascii=False)
        return json.dumps(data, ensure_ascii=False, default=str)

    def call(**kwargs: Any) -> str:
        return _run(acall(**kwargs))

    return FunctionTool(fn=call, async_fn=acall, metadata=ToolMetadata(
        name=spec.name, description=spec.description, fn_schema=spec.model))


def _run(coro: Coroutine[Any, Any, str]) -> str:
    """A coroutine to its end from sync code, also when the caller's thread runs an event loop already."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    out: list[str] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(asyncio.run(coro))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="mindnet-tool")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return out[0]
