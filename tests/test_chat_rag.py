"""RAG strategies through the chat engine: typed injection, sources, query_id, streaming, condensing, no LLM."""

from __future__ import annotations

import json

import pytest
from helpers_chat import chat_mindnet

from mindnet.chat.engine import ChatRequest, ChatTurn
from mindnet.errors import QueryError

HISTORY = [ChatTurn(role="user", content="Was ist Qdrant?"),
           ChatTurn(role="assistant", content="Qdrant ist eine Vektordatenbank.")]


@pytest.fixture
def mindnet(tmp_path, fake_ollama):
    m = chat_mindnet(tmp_path, fake_ollama.url)
    yield m
    m.close()


def spy_searches(monkeypatch, mindnet) -> list:
    requests = []
    original = mindnet.retriever.asearch

    async def spy(request):
        requests.append(request)
        return await original(request)

    monkeypatch.setattr(mindnet.retriever, "asearch", spy)
    return requests


async def test_inject_types_runs_second_retrieval_filtered_to_types(mindnet, monkeypatch, fake_ollama):
    requests = spy_searches(monkeypatch, mindnet)
    fake_ollama.script(["Nimm Qdrant."])
    await mindnet.chat.achat(ChatRequest(message="Soll ich Qdrant nehmen?"))
    assert [r.filters.types for r in requests] == [[], ["value", "decision"]]


async def test_injected_hits_are_merged_without_duplicates(mindnet, fake_ollama):
    fake_ollama.script(["Nimm Qdrant."])
    response = await mindnet.chat.achat(ChatRequest(message="Soll ich Qdrant nehmen?"))
    ids = [s["node_id"] for s in response.sources]
    assert len(ids) == len(set(ids))
    assert {s["type"] for s in response.sources} >= {"value", "decision"}
    merged = response.trace["merged"]
    assert merged["primary"] + merged["injected"] == len(ids)


async def test_strategy_without_inject_types_searches_once(mindnet, monkeypatch, fake_ollama):
    requests = spy_searches(monkeypatch, mindnet)
    fake_ollama.script(["Eine Vektordatenbank."])
    await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert len(requests) == 1


async def test_response_carries_sources_with_breakdown_and_logged_query_id(mindnet, fake_ollama):
    fake_ollama.script(["Qdrant ist eine Vektordatenbank [Qdrant]."])
    response = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert (response.intent, response.reason) == ("FACT", "keyword 'was ist' matched")
    assert response.answer == "Qdrant ist eine Vektordatenbank [Qdrant]."
    assert (response.sources[0]["title"], response.sources[0]["names"]) == ("qdrant", ["Qdrant"])   # file name
    assert set(response.sources[0]) >= {"score_breakdown", "explanation", "node_id", "path"}
    logged = [json.loads(line) for line in
              (mindnet.settings.log_dir / "search_history.jsonl").read_text().splitlines()]
    assert [(r["query_id"], r["source"], r["strategy"]) for r in logged] == [(response.query_id, "chat", "FACT")]


async def test_context_of_the_prompt_contains_retrieved_notes(mindnet, fake_ollama):
    fake_ollama.script(["ok"])
    await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    prompt = fake_ollama.bodies("/api/chat")[-1]["messages"][-1]["content"]
    assert "[1] qdrant (concept, concepts/qdrant.md)" in prompt   # numbered as the user sees the sources


async def test_stream_yields_steps_then_tokens_then_one_done(mindnet, fake_ollama):
    fake_ollama.script(["Qdrant ist eine lokale Vektordatenbank."])
    events = [e async for e in mindnet.chat.astream(ChatRequest(message="Was ist Qdrant?"))]
    kinds = [e.kind for e in events]
    tokens = [e.data["text"] for e in events if e.kind == "token"]
    assert kinds[:6] == ["intent", "retrieval", "graph", "scoring", "sources", "generation"]
    assert kinds[6:] == ["token"] * len(tokens) + ["done"]
    assert events[4].data["sources"] == events[-1].data["sources"]   # the sources come before any token
    assert len(tokens) == 5
    assert "".join(tokens) == events[-1].data["answer"] == "Qdrant ist eine lokale Vektordatenbank."


async def test_follow_up_is_condensed_by_llm_with_history(mindnet, fake_ollama):
    fake_ollama.script(["Was hängt von Qdrant ab?", "Die hybride Suche."])
    response = await mindnet.chat.achat(ChatRequest(message="und was hängt davon ab?", history=HISTORY,
                                                     strategy="FACT"))
    condense_prompt = fake_ollama.bodies("/api/chat")[0]["messages"][-1]["content"]
    assert "Nutzer: Was ist Qdrant?" in condense_prompt
    assert response.trace["search_text"] == "Was hängt von Qdrant ab?"
    assert response.trace["primary"]["queries"]["dense"] == ["Was hängt von Qdrant ab?"]


async def test_follow_up_without_llm_uses_last_user_turn(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    response = await mindnet.chat.achat(ChatRequest(message="und was hängt davon ab?", history=HISTORY,
                                                    strategy="FACT"))
    assert response.trace["search_text"] == "Was ist Qdrant? und was hängt davon ab?"
    assert response.sources[0]["title"] in {"qdrant", "hybride-suche"}


async def test_follow_up_when_the_llm_fails_searches_the_new_question_alone(mindnet, fake_ollama):
    fake_ollama.chat_mode = "error"      # Ollama is up and answers HTTP 500: condensing fails
    response = await mindnet.chat.achat(ChatRequest(message="Wie funktioniert die hybride Suche?", history=HISTORY,
                                                    strategy="FACT"))
    assert (response.trace["search_text"], response.trace["condensed_by"]) == \
        ("Wie funktioniert die hybride Suche?", "failed")                # not "Was ist Qdrant? Wie ..."
    assert response.trace["primary"]["queries"]["dense"] == ["Wie funktioniert die hybride Suche?"]


async def test_follow_up_after_the_router_found_the_llm_failing_searches_the_new_question_alone(mindnet, fake_ollama):
    # the router asks the LLM first (no keyword matches); its HTTP 500 is remembered for a while, and condensing
    # then took the remembered failure for "no LLM" and glued the previous question on (found in the browser)
    fake_ollama.chat_mode = "error"
    question = "Welche Zutaten braucht die Linsensuppe?"
    response = await mindnet.chat.achat(ChatRequest(message=question, history=HISTORY))
    assert "LLM failed" in response.reason, response.reason
    assert (response.trace["search_text"], response.trace["condensed_by"]) == (question, "failed")
    assert (response.generation_available, response.generation_failed) == (False, True)    # the UI offers Retry


async def test_without_llm_rag_returns_passages_and_notice(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    response = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert (response.generation_available, response.generation_failed) == (False, False)   # nothing to retry
    assert response.notice == (
        f"Answer generation is unavailable (model 'phi3:mini' is not available in Ollama at {fake_ollama.url}). "
        "To enable it: pull the model (`ollama pull phi3:mini`) or set MINDNET_LLM_MODEL.")
    assert response.answer.startswith(response.notice + "\n\nThe most relevant passages from your notes:\n- [1] qdrant")
    assert response.sources and fake_ollama.count("/api/chat") == 0


async def test_without_llm_the_stream_has_no_generation_step(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    events = [e async for e in mindnet.chat.astream(ChatRequest(message="Was ist Qdrant?"))]
    assert [e.kind for e in events] == ["intent", "retrieval", "graph", "scoring", "sources", "done"]


async def test_generation_failing_midway_reports_error_then_done(mindnet, fake_ollama):
    fake_ollama.chat_mode = "stream_error"
    events = [e async for e in mindnet.chat.astream(ChatRequest(message="Was ist Qdrant?"))]
    assert [e.kind for e in events][-2:] == ["error", "done"]
    assert events[-1].data["generation_available"] is False
    # the partial answer is kept and marked cut off, with its sources; the notice does not say "start Ollama"
    final = events[-1].data
    assert final["cut_off"] is True and final["answer"] and final["sources"]
    assert final["notice"].startswith("The model failed while answering (Ollama answered with an error:")
    assert "ollama serve" not in final["notice"]


async def test_ollama_is_checked_again_at_once_on_the_next_message(mindnet, fake_ollama):
    fake_ollama.models = {"nomic-embed-text"}
    first = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    fake_ollama.models = {"nomic-embed-text", "phi3:mini"}    # Ollama is back well within the 30 s cache
    fake_ollama.script(["Qdrant ist eine Vektordatenbank [1]."])
    second = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert (first.generation_available, second.generation_available) == (False, True)
    assert second.answer == "Qdrant ist eine Vektordatenbank [1]."


async def test_unknown_strategy_override_is_a_query_error(mindnet):
    with pytest.raises(QueryError) as info:
        await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?", strategy="POETRY"))
    assert info.value.field == "strategy"


def test_router_query_engine_routes_through_the_tools(mindnet, fake_ollama):
    fake_ollama.script(["Eine Vektordatenbank."])
    response = mindnet.chat.router.query("Was ist Qdrant?")
    assert str(response) == "Eine Vektordatenbank."
    assert response.metadata["selector_result"].reason == "keyword 'was ist' matched"



def test_sources_show_each_note_once_with_its_hit_chunks_joined_in_reading_order():
    from llama_index.core.schema import NodeWithScore, TextNode

    from mindnet.chat.strategies import group_by_note

    def hit(note: str, ord_: int, score: float) -> NodeWithScore:
        meta = {"note_id": note, "chunk_id": f"{note}#c{ord_:02d}", "ord": ord_, "text": f"{note} part {ord_}"}
        return NodeWithScore(node=TextNode(text=meta["text"], metadata=meta), score=score)

    grouped = group_by_note([hit("a", 2, 0.9), hit("b", 1, 0.8), hit("a", 1, 0.7)])
    assert [g.node.metadata["note_id"] for g in grouped] == ["a", "b"]
    assert grouped[0].score == 0.9
    assert grouped[0].node.metadata["text"] == "a part 1\n\n[…]\n\na part 2"
    assert grouped[0].node.metadata["chunk_ids"] == ["a#c01", "a#c02"]
    assert grouped[1].node.metadata["text"] == "b part 1"
