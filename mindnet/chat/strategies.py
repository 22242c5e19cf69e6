"""RAG strategies (FACT, DECISION, EMPATHY, CODING): condense, retrieve (+ typed injection), generate.

Each strategy is one `CustomQueryEngine`, so the `RouterQueryEngine` can hold it as a tool; `astream` is
the step-by-step form the chat engine streams from. Without an LLM the best passages are the answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore
from pydantic import PrivateAttr

from mindnet.chat import import_notice
from mindnet.chat.context import ChatServices, Turn
from mindnet.chat.input_limits import fit_search_text
from mindnet.chat.llm import LLMGate, interrupted_notice, unavailable_notice
from mindnet.chat.models import ChatEvent, ChatRequest, ChatResponse, ChatTurn, format_history
from mindnet.chat.prompts import load_prompt
from mindnet.errors import EmptyIndexError, LLMUnavailableError
from mindnet.retrieval.query import ExpandRequest, Filters, QueryRequest
from mindnet.retrieval.results import hit_dict, shown_name
from mindnet.retrieval.retriever import RetrievalResult
from mindnet.settings import RetrievalSettings, Strategy

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = "system"
CONDENSE_PROMPT = "condense"
PASSAGES_SHOWN = 5      # passages in an answer without an LLM
SNIPPET_CHARS = 300


# --------------------------------------------------------------------------- pure helpers


def last_user_turn(history: Sequence[ChatTurn]) -> str | None:
    return next((t.content.strip() for t in reversed(history) if t.role == "user" and t.content.strip()), None)


def condense_without_llm(message: str, history: Sequence[ChatTurn]) -> str:
    """The follow-up plus the last user turn, so "und was hängt davon ab?" keeps its subject."""
    previous = last_user_turn(history)
    return f"{previous} {message.strip()}" if previous else message.strip()


def node_key(n: NodeWithScore) -> str:
    return str(n.node.metadata.get("chunk_id", n.node.node_id))


def merge_nodes(primary: Sequence[NodeWithScore], injected: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """Primary hits in their order, then the injected hits that are not among them."""
    seen = {node_key(n) for n in primary}
    extra = [n for n in injected if node_key(n) not in seen and not seen.add(node_key(n))]
    return [*primary, *extra]


def group_by_note(nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    """One source per note, in the order of its best chunk: the note's hit chunks are joined (in reading
    order) into that source's text, so the LLM keeps all the context and the user sees each note once."""
    groups: dict[str, list[NodeWithScore]] = {}
    for n in nodes:
        groups.setdefault(str(n.node.metadata.get("note_id", node_key(n))), []).append(n)
    out = []
    for chunks in groups.values():
        best = chunks[0]
        if len(chunks) > 1:
            ordered = sorted(chunks, key=lambda c: c.node.metadata.get("ord", 0))
            node = best.node.model_copy()
            node.metadata = {**best.node.metadata,
                             "text": "\n\n[…]\n\n".join(str(c.node.metadata.get("text") or c.node.get_content())
                                                         for c in ordered),
                             "chunk_ids": [node_key(c) for c in ordered]}
            best = NodeWithScore(node=node, score=best.score)
        out.append(best)
    return out


def context_block(sources: Sequence[dict[str, Any]]) -> str:
    """The `{context_str}` of a strategy prompt: each source numbered as the user sees it ([1], [2], ...), with
    its title, type and path, so the answer can cite [1] and the citation links to that source."""
    parts = [f"[{i}] {shown_name(s)} ({s.get('type')}, {s.get('path')})\n"
             f"{(s.get('text') or '').strip()}" for i, s in enumerate(sources, 1)]
    return "\n\n".join(parts) or "(keine passenden Notizen gefunden)"


def snippet(source: Mapping[str, Any]) -> str:
    """A source's text on one line, at most SNIPPET_CHARS long."""
    text = " ".join((source.get("text") or "").split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 3] + "..."


def passages_answer(sources: Sequence[dict[str, Any]], notice: str) -> str:
    """The answer without an LLM: the notice, then the best passages with their sources."""
    if not sources:
        return f"{notice}\n\nNo matching passages were found in your notes."
    lines = [notice, "", "The most relevant passages from your notes:"]
    for i, s in enumerate(sources[:PASSAGES_SHOWN], 1):
        text = snippet(s)
        lines.append(f"- [{i}] {shown_name(s)} ({s.get('path')}, score {float(s.get('score') or 0):.3f}): {text}")
    return "\n".join(lines)


def search_settings(results: Sequence[RetrievalResult]) -> dict[str, Any]:
    """How the first (primary) search ran: mode, graph depth and the edge kinds it followed."""
    if not results:
        return {}
    q = results[0].query
    return {"mode": q.mode, "depth": q.depth, "edge_types": list(q.edge_types), "searches": len(results)}


def retrieval_events(queries: list[str], results: Sequence[RetrievalResult]) -> list[ChatEvent]:
    """The retrieval, graph and scoring step events of one or more searches."""
    traces = [r.trace for r in results]
    graph = traces[0].get("graph") or {} if traces else {}
    return [
        ChatEvent(kind="retrieval", data={"queries": queries, "candidates": sum(t.get("candidates", 0) for t in traces),
                                          "ms": round(sum(t.get("total_ms", 0.0) for t in traces), 1),
                                          **search_settings(results)}),
        ChatEvent(kind="graph", data={"seeds": graph.get("seeds", []), "nodes": graph.get("nodes", 0),
                                      "edges": graph.get("edges", 0), "ms": graph.get("ms", 0.0)}),
        ChatEvent(kind="scoring", data={"ms": round(sum(t.get("scoring_ms", 0.0) for t in traces), 1)}),
    ]


async def acondense(message: str, history: Sequence[ChatTurn], *, gate: LLMGate,
                    prompt: BasePromptTemplate) -> tuple[str, str]:
    """The standalone question for a follow-up, and how it was made ("none" | "llm" | "history" | "failed")."""
    if not history:
        return message.strip(), "none"
    # the LLM was there and failed (HTTP 500, a dropped connection; now, or just before, e.g. for the router):
    # the question as asked. Glued to the previous one it found that one's notes (off-topic sources, one score)
    status = await gate.astatus()
    if status.failed:
        return message.strip(), "failed"
    if not status.available:    # no LLM here: the last question keeps the follow-up's subject
        return condense_without_llm(message, history), "history"
    try:
        answer = await gate.acomplete(prompt.format(chat_history=format_history(history), question=message))
    except LLMUnavailableError:
        return message.strip(), "failed"
    line = next((x.strip() for x in answer.splitlines() if x.strip()), "")
    return (line, "llm") if line else (condense_without_llm(message, history), "history")


# --------------------------------------------------------------------------- engines


class StrategyEngine(CustomQueryEngine):
    """One strategy as a query engine: `astream(turn)` for the chat, `query(str)` for the router."""

    name: str
    strategy: Strategy
    _services: ChatServices = PrivateAttr()
    _prompt: BasePromptTemplate = PrivateAttr()
    _system: str = PrivateAttr(default="")

    def __init__(self, *, name: str, strategy: Strategy, services: ChatServices) -> None:
        super().__init__(name=name, strategy=strategy)
        self._services = services
        self._prompt = load_prompt(strategy.prompt, services.prompts_dir)
        system = services.prompts_dir / f"{SYSTEM_PROMPT}.md"
        self._system = system.read_text(encoding="utf-8").strip() if system.is_file() else ""

    def _get_prompts(self) -> PromptDictType:
        return {"strategy": self._prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "strategy" in prompts:
            self._prompt = prompts["strategy"]

    @property
    def system_prompt(self) -> str | None:
        return self._system or None

    def generation_prompt(self, **values: str) -> str:
        return self._prompt.format(**values)

    async def astream(self, turn: Turn) -> AsyncIterator[ChatEvent]:  # pragma: no cover - abstract
        raise NotImplementedError
        yield

    async def _final(self, turn: Turn) -> ChatResponse:
        async for event in self.astream(turn):
            if event.kind == "done":
                return ChatResponse.model_validate(event.data)
        raise RuntimeError(f"strategy {self.name} ended without a done event")

    def _turn(self, query_str: str) -> Turn:
        return Turn(request=ChatRequest(message=query_str), strategy=self.name, reason="called directly")

    async def acustom_query(self, query_str: str) -> Response:
        final = await self._final(self._turn(query_str))
        return Response(final.answer, metadata={"chat_response": final.model_dump()})

    def custom_query(self, query_str: str) -> Response:
        import asyncio
        return asyncio.run(self.acustom_query(query_str))


class RagStrategyEngine(StrategyEngine):
    """Hybrid retrieval for the (condensed) message, plus one filtered to `inject_types`, then generation."""

    _condense: BasePromptTemplate = PrivateAttr()

    def __init__(self, *, name: str, strategy: Strategy, services: ChatServices) -> None:
        super().__init__(name=name, strategy=strategy, services=services)
        self._condense = load_prompt(CONDENSE_PROMPT, services.prompts_dir)

    def _requests(self, turn: Turn, search_text: str) -> tuple[QueryRequest, QueryRequest | None]:
        r = turn.request.model_copy(update={"message": fit_search_text(turn.request.message)[0]})
        cfg = self.strategy.retrieval or RetrievalSettings()
        expand = ExpandRequest(depth=cfg.expand_depth if r.expand_depth is None else r.expand_depth,
                               edge_types=r.edge_types)
        primary = QueryRequest(query=r.message, search_text=search_text if search_text != r.message.strip()
                               else None, mode=r.mode or cfg.mode, top_k=r.top_k or cfg.top_k, expand=expand,
                               group="chunk")   # group_by_note joins a note's chunks into one source itself
        if not self.strategy.inject_types:
            return primary, None
        inject = primary.model_copy(update={"top_k": cfg.inject_top_k, "expand": ExpandRequest(depth=0),
                                            "filters": Filters(types=list(self.strategy.inject_types))})
        return primary, inject

    async def astream(self, turn: Turn) -> AsyncIterator[ChatEvent]:
        s = self._services
        search_text, condensed_by = await acondense(turn.request.message, turn.request.history, gate=s.gate,
                                                    prompt=self._condense)
        search_text, input_notice = fit_search_text(search_text)
        if input_notice:
            yield ChatEvent(kind="input_notice", data={"message": input_notice, "searched_chars": len(search_text)})
        primary_req, inject_req = self._requests(turn, search_text)
        try:
            primary = await s.retriever.asearch(primary_req)
        except EmptyIndexError:   # the first import has not written a note yet: not "import your vault first"
            progress = s.progress() if s.progress is not None else {}
            if not import_notice.running(progress):
                raise
            yield done(ChatResponse(query_id="", answer=import_notice.still_reading_answer(progress),
                                    intent=self.name, reason=turn.reason, input_notice=input_notice,
                                    import_notice=import_notice.searched_line(progress, unembedded=0)))
            return
        injected = await s.retriever.asearch(inject_req) if inject_req is not None else None
        results = [primary] if injected is None else [primary, injected]
        nodes = merge_nodes(primary.nodes, injected.nodes if injected else [])
        for event in retrieval_events([search_text], results):
            yield event
        merged = RetrievalResult(nodes=nodes, query=primary.query, trace=primary.trace)
        query_id = s.record(primary_req, merged, source="chat", strategy=self.name)
        sources = [hit_dict(n, explain=True) for n in group_by_note(nodes)]
        trace = {"search_text": search_text, "condensed_by": condensed_by, "primary": primary.trace,
                 "inject": None if injected is None else {"types": list(self.strategy.inject_types),
                                                          "hits": len(injected.nodes), "trace": injected.trace},
                 "merged": {"primary": len(primary.nodes), "injected": len(nodes) - len(primary.nodes)}}
        progress = s.progress() if s.progress is not None else {}
        importing = import_notice.searched_line(progress, unembedded=int(primary.trace.get("unembedded_chunks") or 0))
        base = {"query_id": query_id, "intent": self.name, "reason": turn.reason, "sources": sources, "trace": trace,
                "input_notice": input_notice, "import_notice": importing}
        if importing:   # an import runs: say what was searched
            yield ChatEvent(kind="import_notice", data={"message": importing})
        yield ChatEvent(kind="sources", data={"query_id": query_id, "sources": sources})
        if importing and not sources and import_notice.running(progress):   # not "nothing in your notes"
            yield done(ChatResponse(answer=import_notice.still_reading_answer(progress), **base))
            return

        status = await s.gate.astatus()
        if not status.available:
            notice = unavailable_notice(s.settings, status.reason)
            yield done(ChatResponse(answer=passages_answer(sources, notice), generation_available=False,
                                    generation_failed=status.failed, notice=notice, **base))
            return
        yield ChatEvent(kind="generation", data={"model": s.gate.model, "sources": len(sources)})
        pieces: list[str] = []
        context = context_block(sources)
        if importing and import_notice.running(progress):
            context = f"{import_notice.prompt_hint(progress)}\n\n{context}"
        prompt = self.generation_prompt(context_str=context, query_str=search_text)
        try:
            async for piece in s.gate.astream(prompt, system=self.system_prompt):
                pieces.append(piece)
                yield ChatEvent(kind="token", data={"text": piece})
        except LLMUnavailableError as exc:
            if pieces:   # keep what arrived, marked as cut off, with its sources
                yield ChatEvent(kind="error", data={"message": f"generation stopped midway: {exc}"})
                yield done(ChatResponse(answer="".join(pieces), generation_available=False, cut_off=True,
                                        notice=interrupted_notice(str(exc)), **base))
                return
            notice = unavailable_notice(s.settings, str(exc))
            yield done(ChatResponse(answer=passages_answer(sources, notice), generation_available=False,
                                    generation_failed=exc.failed, notice=notice, **base))
            return
        answer = "".join(pieces).strip()
        if importing and import_notice.running(progress):
            answer = import_notice.without_nothing_claim(answer, progress)
        yield done(ChatResponse(answer=answer, **base))


def done(response: ChatResponse) -> ChatEvent:
    return ChatEvent(kind="done", data=response.model_dump())
