"""`mindnet_tools()`: the vault's tools as LlamaIndex `FunctionTool`s.

A real `FunctionAgent` with the real `llama_index.llms.ollama.Ollama` LLM talks over HTTP to the fake Ollama
(tests/fake_ollama.py), which is scripted to call `search`, then `read_note`, then to answer; the tools run on
the imported sample vault. The other tests call the tools directly, without an agent.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllama, tool_call
from helpers_vault import copy_sample_vault
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.llms.ollama import Ollama

from mindnet.agents import SPECS, mindnet_tools
from mindnet.agents.llama import _run
from mindnet.service import Mindnet

CHAT_MODEL = "phi3:mini"
TIMEOUT = 120.0  # generous: the suite runs under heavy load on 2 cores
ALL_TOOLS = ["search", "read_note", "related", "suggest_links", "write_note", "append_to_note", "add_links",
             "recent_changes"]
READ_TOOLS = ["search", "read_note", "related", "suggest_links", "recent_changes"]
QUESTION = "Was steht in meinen Notizen über Qdrant?"
SEARCH_ARGS = {"query": "Qdrant Vektordatenbank", "top_k": 3}
NOTE = "concepts/qdrant.md"
ANSWER = "Qdrant ist deine Vektordatenbank, siehe concepts/qdrant.md."

# llama-index's workflows run inspect.getmembers() over the (pydantic) agent, touching deprecated attributes
pytestmark = [pytest.mark.filterwarnings("ignore:The `__fields:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:Accessing the 'model_:DeprecationWarning")]


@pytest.fixture
def app(tmp_path: Path, make_app) -> Mindnet:
    """A `Mindnet` over a copy of the sample vault, not imported yet; search history under tmp_path/logs."""
    copy_sample_vault(tmp_path / "vault")
    return make_app(log_dir=tmp_path / "logs", mcp_read_only=False)


@pytest.fixture
def vault_app(app: Mindnet) -> Mindnet:
    """The sample vault imported with the fake Ollama's embeddings."""
    app.ingest()
    return app


def by_name(tools: list[FunctionTool]) -> dict[str, FunctionTool]:
    return {t.metadata.name: t for t in tools}


def answer_of(out: ToolOutput) -> dict[str, Any]:
    """The JSON a tool answered (it always answers a JSON string, errors included)."""
    assert isinstance(out, ToolOutput)
    assert isinstance(out.raw_output, str)
    assert out.content == out.raw_output
    return json.loads(out.content)


def history(app: Mindnet) -> list[dict[str, Any]]:
    path = Path(app.settings.log_dir) / "search_history.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def note_text(app: Mindnet, rel: str) -> str:
    return (Path(app.settings.vault_root) / rel).read_bytes().decode("utf-8")


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body["messages"] if m.get("role") == "tool"]


def make_agent(fake: FakeOllama, tools: list[FunctionTool], **kwargs: Any) -> FunctionAgent:
    """A FunctionAgent with the real Ollama LLM pointed at the fake server."""
    llm = Ollama(model=CHAT_MODEL, base_url=fake.url, request_timeout=TIMEOUT)
    return FunctionAgent(tools=tools, llm=llm, timeout=TIMEOUT, **kwargs)


async def run_agent(agent: FunctionAgent, question: str) -> tuple[str, list[ToolCallResult]]:
    handler = agent.run(user_msg=question)
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    output = await handler
    return str(output.response.content), results


# -- a FunctionAgent over the real Ollama client and the fake server ---------------------------------------------

@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
async def test_function_agent_searches_then_reads_the_note_then_answers(
        vault_app: Mindnet, fake_ollama: FakeOllama, streaming: bool) -> None:
    fake_ollama.clear_requests()
    fake_ollama.script([
        {"tool_calls": [{"function": {"name": "search", "arguments": SEARCH_ARGS}}], "content": ""},
        tool_call("read_note", {"note": NOTE}),
        ANSWER,
    ])
    agent = make_agent(fake_ollama, mindnet_tools(vault_app), streaming=streaming,
                       system_prompt="Answer from the user's notes and cite their paths.")

    answer, results = await run_agent(agent, QUESTION)

    assert answer == ANSWER
    assert fake_ollama.pending_replies == 0
    assert [(r.tool_name, r.tool_kwargs, r.tool_output.is_error) for r in results] == [
        ("search", SEARCH_ARGS, False), ("read_note", {"note": NOTE}, False)]

    chats = fake_ollama.bodies("/api/chat")
    assert len(chats) == 3
    assert [body["stream"] for body in chats] == [streaming] * 3
    # every request offers the model all the tools, with their descriptions and parameters
    for body in chats:
        offered = {t["function"]["name"]: t["function"] for t in body["tools"]}
        assert list(offered) == ALL_TOOLS
        assert offered["search"]["description"] == SPECS[0].description
        assert offered["search"]["parameters"]["required"] == ["query"]
        assert offered["read_note"]["parameters"]["required"] == ["note"]
    assert [m["role"] for m in chats[0]["messages"]] == ["system", "user"]
    assert chats[0]["messages"][1]["content"] == QUESTION

    # 2nd request: the model's search call and its result
    assert [c["function"] for m in chats[1]["messages"] for c in m.get("tool_calls") or []] == [
        {"name": "search", "arguments": SEARCH_ARGS}]
    [found] = tool_messages(chats[1])
    assert NOTE in found
    search = json.loads(found)
    assert NOTE in [hit["path"] for hit in search["hits"]]
    assert 1 <= len(search["hits"]) <= SEARCH_ARGS["top_k"]
    assert search["hits"] == [{**hit, "rank": i} for i, hit in enumerate(search["hits"], 1)]

    # 3rd request: both tool results, the second one the whole note
    first, read = tool_messages(chats[2])
    assert first == found
    assert NOTE in read
    note = json.loads(read)
    assert (note["path"], note["truncated"]) == (NOTE, False)
    assert note["markdown"] == note_text(vault_app, NOTE)
    lines = [line for line in note_text(vault_app, NOTE).splitlines() if line.strip()]
    assert len(lines) > 3
    assert all(json.dumps(line, ensure_ascii=False)[1:-1] in read for line in lines)  # the note as the model reads it

    # both calls are in the search history as coming from an agent
    records = {r["query_id"]: r for r in history(vault_app)}
    assert records[search["query_id"]]["source"] == "agent"
    assert records[search["query_id"]]["query_text"] == SEARCH_ARGS["query"]
    assert records[note["query_id"]]["source"] == "agent"
    assert records[note["query_id"]]["mode"] == "read_note"
    assert {r["source"] for r in records.values()} == {"agent"}


async def test_function_agent_recovers_from_an_unknown_note(vault_app: Mindnet, fake_ollama: FakeOllama) -> None:
    fake_ollama.clear_requests()
    fake_ollama.script([tool_call("read_note", {"note": "Qdrnat"}), tool_call("read_note", {"note": "qdrant"}),
                        ANSWER])
    agent = make_agent(fake_ollama, mindnet_tools(vault_app, read_only=True), streaming=False)

    answer, results = await run_agent(agent, QUESTION)

    assert answer == ANSWER
    assert [r.tool_output.is_error for r in results] == [False, False]
    chats = fake_ollama.bodies("/api/chat")
    assert [list(t["function"]["name"] for t in body["tools"]) for body in chats] == [READ_TOOLS] * 3
    refused, read = tool_messages(chats[2])
    assert "error" in json.loads(refused) and "'qdrant'" in json.loads(refused)["error"]
    assert json.loads(read)["path"] == NOTE


# -- the tools without an agent ----------------------------------------------------------------------------------

def test_each_tool_carries_the_specs_name_description_and_input_model(app: Mindnet) -> None:
    tools = mindnet_tools(app)
    assert [t.metadata.name for t in tools] == ALL_TOOLS == [s.name for s in SPECS]
    for tool, spec in zip(tools, SPECS, strict=True):
        assert isinstance(tool, FunctionTool)
        assert (tool.metadata.name, tool.metadata.description) == (spec.name, spec.description)
        assert tool.metadata.fn_schema is spec.model
        assert tool.metadata.description.strip()
        parameters = tool.metadata.to_openai_tool(skip_length_check=True)["function"]["parameters"]
        assert set(parameters["properties"]) == set(spec.model.model_fields)
        assert parameters["properties"] == spec.model.model_json_schema()["properties"]
        assert sorted(parameters.get("required", [])) == sorted(
            n for n, f in spec.model.model_fields.items() if f.is_required())


def test_read_only_gives_only_the_five_read_tools(app: Mindnet) -> None:
    assert [t.metadata.name for t in mindnet_tools(app, read_only=True)] == READ_TOOLS
    assert [t.metadata.name for t in mindnet_tools(app, read_only=False)] == ALL_TOOLS


def test_read_only_defaults_to_the_mcp_read_only_setting(tmp_path: Path, make_app) -> None:
    app = make_app(log_dir=tmp_path / "logs", mcp_read_only=True)
    assert [t.metadata.name for t in mindnet_tools(app)] == READ_TOOLS
    assert [t.metadata.name for t in mindnet_tools(app, read_only=False)] == ALL_TOOLS


def test_unknown_note_answers_an_error_naming_the_closest_titles(vault_app: Mindnet) -> None:
    read_note = by_name(mindnet_tools(vault_app))["read_note"]
    title = answer_of(read_note.call(note=NOTE))["title"]
    data = answer_of(read_note.call(note="Qdrnat"))
    assert list(data) == ["error"]
    assert "'Qdrnat'" in data["error"]
    assert "closest notes" in data["error"]
    assert repr(title) in data["error"].split("closest notes", 1)[1]


async def test_unknown_note_answers_the_error_also_async(vault_app: Mindnet) -> None:
    read_note = by_name(mindnet_tools(vault_app))["read_note"]
    title = answer_of(await read_note.acall(note=NOTE))["title"]
    data = answer_of(await read_note.acall(note="Qdrant Datenbank"))
    assert list(data) == ["error"]
    assert repr(title) in data["error"].split("closest notes", 1)[1]


@pytest.mark.parametrize(("tool", "kwargs", "error"), [
    ("read_note", {}, "invalid arguments: note is required"),
    ("read_note", {"note": NOTE, "page": 2}, "invalid arguments: page: Extra inputs are not permitted"),
    ("search", {"query": ""}, "invalid arguments: query: must not be empty"),
])
async def test_invalid_arguments_answer_an_error_not_an_exception(
        app: Mindnet, tool: str, kwargs: dict[str, Any], error: str) -> None:
    t = by_name(mindnet_tools(app))[tool]
    assert answer_of(await t.acall(**kwargs)) == {"error": error}
    assert answer_of(t.call(**kwargs)) == {"error": error}


def test_sync_call_outside_an_event_loop(vault_app: Mindnet) -> None:
    tools = by_name(mindnet_tools(vault_app))
    hits = answer_of(tools["search"].call(**SEARCH_ARGS))["hits"]
    assert NOTE in [h["path"] for h in hits]
    assert answer_of(tools["read_note"].call(note=NOTE))["markdown"] == note_text(vault_app, NOTE)


async def test_sync_call_works_inside_a_running_event_loop(vault_app: Mindnet) -> None:
    asyncio.get_running_loop()  # this test's loop runs; asyncio.run() would refuse here
    tools = by_name(mindnet_tools(vault_app))
    for _ in range(2):  # sync and async calls in turns: nothing stays bound to one loop
        note = answer_of(tools["read_note"].call(note=NOTE))
        assert (note["path"], note["markdown"]) == (NOTE, note_text(vault_app, NOTE))
        hits = answer_of(tools["search"].call(**SEARCH_ARGS))["hits"]
        assert NOTE in [h["path"] for h in hits]
        hits = answer_of(await tools["search"].acall(**SEARCH_ARGS))["hits"]
        assert NOTE in [h["path"] for h in hits]
    sources = [r["source"] for r in history(vault_app)]
    assert sources == ["agent"] * 6


async def test_run_helper_finishes_a_coroutine_in_another_thread_when_a_loop_runs() -> None:
    async def where() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    assert _run(where()) == "mindnet-tool"

    async def boom() -> str:
        raise KeyError("kaputt")

    with pytest.raises(KeyError, match="kaputt"):
        _run(boom())


def test_run_helper_without_a_loop_runs_in_this_thread() -> None:
    async def where() -> str:
        return threading.current_thread().name

    assert _run(where()) == threading.current_thread().name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_argument_reaches_an_ollama_model_with_its_type(spec: Any) -> None:
    """What a local model reads: the tool as llama-index-llms-ollama hands it to Ollama's own client. That client
    drops `anyOf`, so an optional `str | None` field arrived with no type; each field must keep its type."""
    import ollama
    from llama_index.core.tools import ToolMetadata

    sent = ollama.Tool.model_validate(ToolMetadata(name=spec.name, description=spec.description,
                                                   fn_schema=spec.model).to_openai_tool())
    props = sent.model_dump(exclude_none=True)["function"]["parameters"]["properties"]
    assert props
    untyped = [name for name, prop in props.items() if "type" not in prop]
    assert untyped == [], f"{spec.name}: {untyped} reach Ollama without a type"
