"""The fake Ollama server, exercised through the real ollama / llama-index clients over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest
from fake_ollama import FakeOllama, hashed_embedding, normalize_model, split_chunks, tool_call
from llama_index.core.llms import ChatMessage
from llama_index.embeddings.ollama import OllamaEmbedding
from llama_index.llms.ollama import Ollama

EMBED_MODEL = "nomic-embed-text"
CHAT_MODEL = "phi3:mini"
TIMEOUT = 5.0


def make_embedder(server: FakeOllama, model: str = EMBED_MODEL, **kwargs: Any) -> OllamaEmbedding:
    return OllamaEmbedding(model_name=model, base_url=server.url, client_kwargs={"timeout": TIMEOUT},
                           **kwargs)


def make_llm(server: FakeOllama, model: str = CHAT_MODEL, **kwargs: Any) -> Ollama:
    return Ollama(model=model, base_url=server.url, request_timeout=TIMEOUT, **kwargs)


def user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


# -- hashed_embedding / helpers ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "bucket"), [("wort", 0), ("notiz", 5), ("katze", 2), ("", 4)])
def test_hashed_embedding_single_token_is_one_hot_in_its_golden_bucket(text: str, bucket: int) -> None:
    expected = [0.0] * 8
    expected[bucket] = 1.0
    assert hashed_embedding(text, 8) == expected


def test_hashed_embedding_is_case_and_repetition_insensitive_bag_of_words() -> None:
    assert hashed_embedding("wort notiz", 8) == [0.7071067811865475, 0.0, 0.0, 0.0, 0.0,
                                                 0.7071067811865475, 0.0, 0.0]


def test_hashed_embedding_lowercases_tokens() -> None:
    assert hashed_embedding("WORT Notiz", 8) == hashed_embedding("wort notiz", 8)


def test_hashed_embedding_similarity_follows_shared_words() -> None:
    base = hashed_embedding("rote Katze")
    shared = sum(a * b for a, b in zip(base, hashed_embedding("rote Hund"), strict=True))
    disjoint = sum(a * b for a, b in zip(base, hashed_embedding("blaues Auto"), strict=True))
    assert (round(shared, 12), disjoint) == (0.5, 0.0)


def test_hashed_embedding_is_identical_in_another_process() -> None:
    code = "import json, fake_ollama; print(json.dumps(fake_ollama.hashed_embedding('Über Notizen', 16)))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == hashed_embedding("Über Notizen", 16)


@pytest.mark.parametrize(("text", "chunks"), [
    ("Antwort: a b", ["Antwort: ", "a ", "b"]),
    ("  lead", ["  ", "lead"]),
    ("eins\nzwei ", ["eins\n", "zwei "]),
    ("", []),
])
def test_split_chunks_splits_at_word_starts(text: str, chunks: list[str]) -> None:
    assert split_chunks(text) == chunks


@pytest.mark.parametrize(("name", "normalized"), [
    ("nomic-embed-text", "nomic-embed-text:latest"),
    ("phi3:mini", "phi3:mini"),
    ("registry.local:5000/llama", "registry.local:5000/llama:latest"),
])
def test_normalize_model_adds_latest_tag(name: str, normalized: str) -> None:
    assert normalize_model(name) == normalized


# -- embeddings through OllamaEmbedding --------------------------------------------------------

@pytest.mark.parametrize("method", ["get_text_embedding", "get_query_embedding"])
def test_single_embedding_is_the_hashed_vector(fake_ollama: FakeOllama, method: str) -> None:
    vector = getattr(make_embedder(fake_ollama), method)("Graph der Notizen")
    assert vector == hashed_embedding("Graph der Notizen", 64)


@pytest.mark.parametrize("method", ["aget_text_embedding", "aget_query_embedding"])
async def test_async_single_embedding_is_the_hashed_vector(fake_ollama: FakeOllama, method: str) -> None:
    vector = await getattr(make_embedder(fake_ollama), method)("Graph der Notizen")
    assert vector == hashed_embedding("Graph der Notizen", 64)


def test_batch_embedding_returns_one_hashed_vector_per_text(fake_ollama: FakeOllama) -> None:
    texts = ["erste Notiz", "zweite Notiz", "dritte"]
    assert make_embedder(fake_ollama).get_text_embedding_batch(texts) == [
        hashed_embedding(t, 64) for t in texts]


async def test_async_batch_embedding_returns_one_hashed_vector_per_text(fake_ollama: FakeOllama) -> None:
    texts = ["erste Notiz", "zweite Notiz", "dritte"]
    assert await make_embedder(fake_ollama).aget_text_embedding_batch(texts) == [
        hashed_embedding(t, 64) for t in texts]


def test_batch_embedding_sends_one_request_per_batch(fake_ollama: FakeOllama) -> None:
    make_embedder(fake_ollama, embed_batch_size=2).get_text_embedding_batch(["a", "b", "c", "d", "e"])
    assert [b["input"] for b in fake_ollama.bodies("/api/embed")] == [["a", "b"], ["c", "d"], ["e"]]


def test_embed_request_body_is_recorded(fake_ollama: FakeOllama) -> None:
    make_embedder(fake_ollama).get_text_embedding("Hallo")
    body = fake_ollama.bodies("/api/embed")[0]
    assert (body["model"], body["input"]) == (EMBED_MODEL, "Hallo")


def test_legacy_embeddings_endpoint_returns_hashed_vector(fake_ollama: FakeOllama) -> None:
    result = ollama.Client(host=fake_ollama.url).embeddings(model=EMBED_MODEL, prompt="alte API")
    assert list(result["embedding"]) == hashed_embedding("alte API", 64)


def test_changed_dim_changes_vector_length(fake_ollama: FakeOllama) -> None:
    fake_ollama.dim = 8
    assert make_embedder(fake_ollama).get_text_embedding("wort notiz") == hashed_embedding("wort notiz", 8)


def test_custom_embed_fn_is_used(fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_fn = lambda text: [float(len(text)), 1.0]
    assert make_embedder(fake_ollama).get_text_embedding_batch(["abc", "z"]) == [[3.0, 1.0], [1.0, 1.0]]


def test_empty_mode_returns_empty_vectors(fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_mode = "empty"
    assert make_embedder(fake_ollama).get_text_embedding_batch(["a", "b"]) == [[], []]


def test_empty_mode_single_embedding_is_empty(fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_mode = "empty"
    assert make_embedder(fake_ollama).get_text_embedding("a") == []


def test_wrong_dim_mode_returns_dim_plus_one(fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_mode = "wrong_dim"
    vector = make_embedder(fake_ollama).get_text_embedding("wort")
    assert vector == hashed_embedding("wort", 64) + [0.0]


def test_error_mode_raises_response_error_500(fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_mode = "error"
    with pytest.raises(ollama.ResponseError) as info:
        make_embedder(fake_ollama).get_text_embedding("a")
    assert (info.value.status_code, info.value.error) == (
        500, "llama runner process has terminated: exit status 2")


def test_raising_embed_fn_becomes_http_500(fake_ollama: FakeOllama) -> None:
    def boom(text: str) -> list[float]:
        raise ValueError("kaputt")

    fake_ollama.embed_fn = boom
    with pytest.raises(ollama.ResponseError) as info:
        make_embedder(fake_ollama).get_text_embedding("a")
    assert (info.value.status_code, info.value.error) == (500, "fake-ollama: ValueError: kaputt")


def test_embedding_with_unknown_model_raises_404(fake_ollama: FakeOllama) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        make_embedder(fake_ollama, model="mxbai-embed-large").get_text_embedding("a")
    assert (info.value.status_code, info.value.error) == (
        404, 'model "mxbai-embed-large" not found, try pulling it first')


# -- LLM through llama_index Ollama -----------------------------------------------------------

def test_complete_echoes_prompt_by_default(fake_ollama: FakeOllama) -> None:
    assert make_llm(fake_ollama).complete("Wer bist du?").text == "Antwort: Wer bist du?"


async def test_acomplete_echoes_prompt_by_default(fake_ollama: FakeOllama) -> None:
    assert (await make_llm(fake_ollama).acomplete("Wer bist du?")).text == "Antwort: Wer bist du?"


def test_chat_returns_scripted_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["Das steht in [[Notiz A]]."])
    assert make_llm(fake_ollama).chat(user("Frage")).message.content == "Das steht in [[Notiz A]]."


async def test_achat_returns_scripted_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["asynchron"])
    assert (await make_llm(fake_ollama).achat(user("Frage"))).message.content == "asynchron"


def test_scripted_replies_are_consumed_in_order_then_chat_fn(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["eins", "zwei"])
    llm = make_llm(fake_ollama)
    replies = [llm.chat(user("q")).message.content for _ in range(3)]
    assert replies == ["eins", "zwei", "Antwort: q"]


def test_chat_fn_receives_the_messages_as_dicts(fake_ollama: FakeOllama) -> None:
    seen: list[list[dict[str, Any]]] = []
    fake_ollama.chat_fn = lambda messages: seen.append(messages) or "ok"
    make_llm(fake_ollama).chat([ChatMessage(role="system", content="Sei knapp."),
                                ChatMessage(role="user", content="Hallo")])
    assert [(m["role"], m["content"]) for m in seen[0]] == [("system", "Sei knapp."), ("user", "Hallo")]


def test_chat_reports_token_usage(fake_ollama: FakeOllama) -> None:
    response = make_llm(fake_ollama).chat(user("eins zwei drei"))
    assert response.raw["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_stream_chat_yields_several_deltas_joining_to_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["Die Antwort steht in drei Notizen."])
    deltas = [r.delta for r in make_llm(fake_ollama).stream_chat(user("Frage"))]
    assert deltas == ["Die ", "Antwort ", "steht ", "in ", "drei ", "Notizen.", ""]


def test_stream_chat_last_response_carries_full_text(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["a b c"])
    last = list(make_llm(fake_ollama).stream_chat(user("Frage")))[-1]
    assert (last.message.content, last.raw["done"], last.raw["done_reason"]) == ("a b c", True, "stop")


async def test_astream_chat_yields_several_deltas_joining_to_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(["Die Antwort steht in drei Notizen."])
    gen = await make_llm(fake_ollama).astream_chat(user("Frage"))
    deltas = [r.delta async for r in gen]
    assert deltas == ["Die ", "Antwort ", "steht ", "in ", "drei ", "Notizen.", ""]


def test_stream_complete_joins_to_default_reply(fake_ollama: FakeOllama) -> None:
    deltas = [r.delta for r in make_llm(fake_ollama).stream_complete("x y")]
    assert deltas == ["Antwort: ", "x ", "y", ""]


def test_context_window_comes_from_show(fake_ollama: FakeOllama) -> None:
    fake_ollama.context_length = 2048
    assert make_llm(fake_ollama).metadata.context_window == 2048


def test_format_and_tools_are_accepted_and_recorded(fake_ollama: FakeOllama) -> None:
    tool = {"type": "function", "function": {"name": "suche", "description": "Suche Notizen",
                                             "parameters": {"type": "object", "properties": {}}}}
    make_llm(fake_ollama, json_mode=True).chat(user("q"), tools=[tool])
    body = fake_ollama.bodies("/api/chat")[0]
    assert (body["format"], body["tools"][0]["function"]["name"]) == ("json", "suche")


@pytest.mark.parametrize(("context_window", "status", "error"), [
    (-1, 404, "model 'llama9' not found"),  # llama-index asks /api/show first
    (4096, 404, 'model "llama9" not found, try pulling it first'),
])
def test_chat_with_missing_model_raises(fake_ollama: FakeOllama, context_window: int, status: int,
                                        error: str) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        make_llm(fake_ollama, model="llama9", context_window=context_window).chat(user("q"))
    assert (info.value.status_code, info.value.error) == (status, error)


def test_chat_with_embedding_model_raises_400(fake_ollama: FakeOllama) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        make_llm(fake_ollama, model=EMBED_MODEL, context_window=4096).chat(user("q"))
    assert (info.value.status_code, info.value.error) == (400, '"nomic-embed-text" does not support chat')


def test_chat_error_mode_raises_response_error_500(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_mode = "error"
    with pytest.raises(ollama.ResponseError) as info:
        make_llm(fake_ollama).chat(user("q"))
    assert info.value.status_code == 500


def test_stream_error_mode_fails_after_first_delta(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_mode = "stream_error"
    fake_ollama.script(["erst dann Absturz"])
    deltas: list[str] = []
    with pytest.raises(ollama.ResponseError) as info:
        for response in make_llm(fake_ollama).stream_chat(user("q")):
            deltas.append(response.delta)
    assert (deltas, info.value.error) == (["erst "], "llama runner process has terminated: exit status 2")


# -- scripted tool calls ----------------------------------------------------------------------

SEARCH_CALL = {"tool_calls": [{"function": {"name": "search", "arguments": {"query": "qdrant", "top_k": 3}}}]}


def calls_of(llm: Ollama, response: Any) -> list[tuple[str, dict[str, Any]]]:
    calls = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    return [(t.tool_name, t.tool_kwargs) for t in calls]


def test_tool_call_helper_builds_the_wire_reply() -> None:
    assert tool_call("search", {"query": "qdrant", "top_k": 3}) == {"content": "", **SEARCH_CALL}


def test_chat_returns_scripted_tool_calls(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([SEARCH_CALL, "fertig"])
    llm = make_llm(fake_ollama)
    first, second = llm.chat(user("q")), llm.chat(user("q"))
    assert (calls_of(llm, first), first.message.content) == ([("search", {"query": "qdrant", "top_k": 3})], "")
    assert (calls_of(llm, second), second.message.content) == ([], "fertig")


async def test_achat_returns_scripted_tool_calls_with_content(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([tool_call("read_note", {"note": "a.md"}, content="Ich lese nach.")])
    llm = make_llm(fake_ollama)
    response = await llm.achat(user("q"))
    assert (calls_of(llm, response), response.message.content) == ([("read_note", {"note": "a.md"})],
                                                                    "Ich lese nach.")


def test_non_streaming_tool_calls_are_in_ollamas_wire_format(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([{"content": "x", "tool_calls": [{"function": {"name": "a", "arguments": {"n": 1}}},
                                                        {"function": {"name": "b"}}]}])
    body = httpx.post(f"{fake_ollama.url}/api/chat", timeout=TIMEOUT, json={
        "model": CHAT_MODEL, "stream": False, "messages": [{"role": "user", "content": "q"}]}).json()
    assert (body["message"], body["done"], body["done_reason"]) == (
        {"role": "assistant", "content": "x", "tool_calls": [{"function": {"name": "a", "arguments": {"n": 1}}},
                                                              {"function": {"name": "b", "arguments": {}}}]},
        True, "stop")


def test_streamed_tool_calls_come_in_one_chunk_before_the_last_line(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([tool_call("search", {"query": "qdrant"}, content="Moment bitte")])
    with httpx.stream("POST", f"{fake_ollama.url}/api/chat", timeout=TIMEOUT, json={
            "model": CHAT_MODEL, "messages": [{"role": "user", "content": "q"}]}) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert [(line["message"]["content"], line["message"].get("tool_calls"), line["done"]) for line in lines] == [
        ("Moment ", None, False), ("bitte", None, False),
        ("", [{"function": {"name": "search", "arguments": {"query": "qdrant"}}}], False), ("", None, True)]


def test_stream_chat_last_response_carries_the_tool_calls(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([tool_call("search", {"query": "qdrant"}, content="Moment bitte")])
    llm = make_llm(fake_ollama)
    responses = list(llm.stream_chat(user("q")))
    assert "".join(r.delta or "" for r in responses) == "Moment bitte"
    assert calls_of(llm, responses[-1]) == [("search", {"query": "qdrant"})]
    assert calls_of(llm, responses[0]) == []


async def test_astream_chat_with_tools_sees_the_scripted_call(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([SEARCH_CALL])
    llm = make_llm(fake_ollama)
    tool = {"type": "function", "function": {"name": "search", "description": "Suche",
                                             "parameters": {"type": "object", "properties": {}}}}
    gen = await llm.astream_chat(user("q"), tools=[tool])
    last = [r async for r in gen][-1]
    assert calls_of(llm, last) == [("search", {"query": "qdrant", "top_k": 3})]
    assert fake_ollama.bodies("/api/chat")[0]["tools"][0]["function"]["name"] == "search"


def test_tool_results_arrive_in_the_next_request(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([SEARCH_CALL])
    client = ollama.Client(host=fake_ollama.url)
    first = client.chat(model=CHAT_MODEL, messages=[{"role": "user", "content": "q"}])
    client.chat(model=CHAT_MODEL, messages=[{"role": "user", "content": "q"}, first.message,
                                            {"role": "tool", "content": "treffer: a.md"}])
    second = fake_ollama.bodies("/api/chat")[1]["messages"]
    assert [(m["role"], m.get("content") or "") for m in second] == [("user", "q"), ("assistant", ""),
                                                              ("tool", "treffer: a.md")]
    assert second[1]["tool_calls"] == SEARCH_CALL["tool_calls"]


def test_chat_fn_may_return_a_tool_call(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_fn = lambda messages: tool_call("echo", {"text": messages[-1]["content"]})
    llm = make_llm(fake_ollama)
    assert calls_of(llm, llm.chat(user("hallo"))) == [("echo", {"text": "hallo"})]


def test_a_single_dict_is_one_scripted_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(SEARCH_CALL)
    assert fake_ollama.pending_replies == 1


@pytest.mark.parametrize("reply", [
    {"text": "x"},
    {"tool_calls": [{"name": "search", "arguments": {}}]},
    {"tool_calls": [{"function": {"name": "", "arguments": {}}}]},
    {"tool_calls": [{"function": {"name": "search", "arguments": "{}"}}]},
    {"content": 3},
])
def test_malformed_reply_is_refused_and_nothing_is_queued(fake_ollama: FakeOllama, reply: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        fake_ollama.script(["gut", reply])
    assert fake_ollama.pending_replies == 0


def test_generate_answers_only_the_content_of_a_tool_reply(fake_ollama: FakeOllama) -> None:
    fake_ollama.script([tool_call("search", {"query": "x"}, content="nur Text")])
    result = ollama.Client(host=fake_ollama.url).generate(model=CHAT_MODEL, prompt="p")
    assert result.response == "nur Text"


# -- raw ollama client: generate, tags, show, version -----------------------------------------

def test_generate_non_streaming_returns_reply(fake_ollama: FakeOllama) -> None:
    result = ollama.Client(host=fake_ollama.url).generate(model=CHAT_MODEL, prompt="x y")
    assert (result.response, result.done, result.eval_count) == ("Antwort: x y", True, 3)


def test_generate_streaming_yields_chunks(fake_ollama: FakeOllama) -> None:
    parts = ollama.Client(host=fake_ollama.url).generate(model=CHAT_MODEL, prompt="x y", stream=True)
    assert [p.response for p in parts] == ["Antwort: ", "x ", "y", ""]


def test_generate_passes_system_and_prompt_to_chat_fn(fake_ollama: FakeOllama) -> None:
    fake_ollama.chat_fn = lambda messages: "|".join(f"{m['role']}={m['content']}" for m in messages)
    result = ollama.Client(host=fake_ollama.url).generate(model=CHAT_MODEL, prompt="p", system="s")
    assert result.response == "system=s|user=p"


def test_chat_without_messages_only_loads_the_model(fake_ollama: FakeOllama) -> None:
    result = ollama.Client(host=fake_ollama.url).chat(model=CHAT_MODEL, messages=[])
    assert (result.message.content, result.done_reason) == ("", "load")


def test_tags_lists_models_with_latest_tag(fake_ollama: FakeOllama) -> None:
    models = ollama.Client(host=fake_ollama.url).list().models
    assert [m.model for m in models] == ["nomic-embed-text:latest", "phi3:mini"]


def test_tags_follows_models_changed_at_run_time(fake_ollama: FakeOllama) -> None:
    fake_ollama.models = {"llama3.2"}
    assert [m.model for m in ollama.Client(host=fake_ollama.url).list().models] == ["llama3.2:latest"]


@pytest.mark.parametrize("name", ["nomic-embed-text", "nomic-embed-text:latest"])
def test_show_accepts_name_with_or_without_latest(fake_ollama: FakeOllama, name: str) -> None:
    info = ollama.Client(host=fake_ollama.url).show(name)
    assert (info.modelinfo["nomic-bert.embedding_length"], info.capabilities) == (64, ["embedding"])


def test_show_unknown_model_is_404(fake_ollama: FakeOllama) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        ollama.Client(host=fake_ollama.url).show("nope")
    assert (info.value.status_code, info.value.error) == (404, "model 'nope' not found")


def test_version_endpoint(fake_ollama: FakeOllama) -> None:
    assert httpx.get(f"{fake_ollama.url}/api/version", timeout=TIMEOUT).json() == {"version": "0.12.6"}


def test_root_says_ollama_is_running(fake_ollama: FakeOllama) -> None:
    assert httpx.get(fake_ollama.url, timeout=TIMEOUT).text == "Ollama is running"


def test_unknown_path_is_plain_404(fake_ollama: FakeOllama) -> None:
    response = httpx.post(f"{fake_ollama.url}/api/nope", json={}, timeout=TIMEOUT)
    assert (response.status_code, response.text) == (404, "404 page not found")


def test_invalid_json_body_is_400(fake_ollama: FakeOllama) -> None:
    response = httpx.post(f"{fake_ollama.url}/api/chat", content=b"{nope", timeout=TIMEOUT)
    assert (response.status_code, response.json()) == (400, {"error": "invalid request body"})


# -- recording, lifecycle ----------------------------------------------------------------------

def test_requests_are_recorded_in_order_with_counts(fake_ollama: FakeOllama) -> None:
    client = ollama.Client(host=fake_ollama.url)
    client.list()
    client.embed(model=EMBED_MODEL, input="a")
    client.embed(model=EMBED_MODEL, input="b")
    assert ([p for p, _ in fake_ollama.requests], fake_ollama.count("/api/embed")) == (
        ["/api/tags", "/api/embed", "/api/embed"], 2)


def test_reset_restores_defaults_and_clears_records(fake_ollama: FakeOllama) -> None:
    fake_ollama.models = {"x"}
    fake_ollama.embed_mode = "error"
    fake_ollama.script(["r"])
    ollama.Client(host=fake_ollama.url).list()
    fake_ollama.reset()
    assert (fake_ollama.models, fake_ollama.embed_mode, fake_ollama.pending_replies, fake_ollama.requests) == (
        {"nomic-embed-text", "phi3:mini"}, "ok", 0, [])


def test_context_manager_starts_and_stops() -> None:
    with FakeOllama() as server:
        url = server.url
        assert httpx.get(url, timeout=TIMEOUT).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=TIMEOUT)


def test_url_before_start_raises() -> None:
    with pytest.raises(RuntimeError, match="never started"):
        _ = FakeOllama().url


def test_stopped_server_embedding_raises_connection_error(fake_ollama: FakeOllama) -> None:
    embedder = make_embedder(fake_ollama)
    embedder.get_text_embedding("warm up the keep-alive connection")
    fake_ollama.stop()
    with pytest.raises(ConnectionError, match="Failed to connect to Ollama"):
        embedder.get_text_embedding("a")


async def test_stopped_server_async_embedding_raises_connection_error(fake_ollama: FakeOllama) -> None:
    embedder = make_embedder(fake_ollama)
    await embedder.aget_text_embedding("warm up")
    fake_ollama.stop()
    with pytest.raises(ConnectionError, match="Failed to connect to Ollama"):
        await embedder.aget_text_embedding("a")


def test_stopped_server_chat_raises_connection_error(fake_ollama: FakeOllama) -> None:
    llm = make_llm(fake_ollama)
    llm.chat(user("warm up"))
    fake_ollama.stop()
    with pytest.raises(ConnectionError, match="Failed to connect to Ollama"):
        llm.chat(user("q"))


def test_stopped_server_stream_chat_raises_raw_httpx_connect_error(fake_ollama: FakeOllama) -> None:
    # The ollama client only maps ConnectError to ConnectionError on non-streaming requests.
    llm = make_llm(fake_ollama, context_window=4096)
    fake_ollama.stop()
    with pytest.raises(httpx.ConnectError):
        list(llm.stream_chat(user("q")))


def test_restart_serves_again_on_the_same_url(fake_ollama: FakeOllama) -> None:
    embedder = make_embedder(fake_ollama)
    fake_ollama.stop()
    fake_ollama.start()
    assert embedder.get_text_embedding("wieder da") == hashed_embedding("wieder da", 64)


def test_latency_beyond_client_timeout_raises_read_timeout(fake_ollama: FakeOllama) -> None:
    fake_ollama.latency = 30.0  # interrupted by stop() at teardown
    embedder = OllamaEmbedding(model_name=EMBED_MODEL, base_url=fake_ollama.url,
                               client_kwargs={"timeout": 0.2})
    with pytest.raises(httpx.ReadTimeout):
        embedder.get_text_embedding("a")
