"""The chat engine: route a message, run its strategy, stream the steps and tokens, log the search.

The router is a LlamaIndex `RouterQueryEngine` over one `QueryEngineTool` per strategy, choosing with the
`IntentSelector`. `ChatEngine.astream` runs the same selector and tools step by step and yields
`ChatEvent`s (intent, retrieval, graph, scoring, generation, token ..., exactly one done);
`achat` consumes it. The HTTP API and the Chainlit UI use only these two.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.tools import QueryEngineTool, ToolMetadata

from mindnet.chat.context import ChatServices, Turn
from mindnet.chat.interview import InterviewEngine
from mindnet.chat.llm import LLMGate
from mindnet.chat.models import ChatEvent, ChatRequest, ChatResponse, ChatTurn, EventKind, format_history
from mindnet.chat.selector import IntentSelector, Selection, keyword_or_none
from mindnet.chat.strategies import RagStrategyEngine, StrategyEngine
from mindnet.errors import QueryError
from mindnet.settings import Strategy

logger = logging.getLogger(__name__)

__all__ = ["ChatEngine", "ChatEvent", "ChatRequest", "ChatResponse", "ChatTurn", "EventKind", "format_history"]


def engine_for(name: str, strategy: Strategy, services: ChatServices) -> StrategyEngine:
    """A strategy with retrieval settings is RAG; one without is the interview."""
    kind = RagStrategyEngine if strategy.retrieval is not None else InterviewEngine
    return kind(name=name, strategy=strategy, services=services)


class ChatEngine:
    """Routes each message to one strategy engine and streams its work."""

    def __init__(self, *, services: ChatServices, selector: IntentSelector,
                 engines: Mapping[str, StrategyEngine]) -> None:
        self.services = services
        self.selector = selector
        self.engines = dict(engines)
        self.tools = [QueryEngineTool(query_engine=e, metadata=ToolMetadata(
            name=name, description=" ".join(e.strategy.description.split()))) for name, e in self.engines.items()]
        # the selector always picks one tool, so the router's summarizer (and its LLM) never runs; a MockLLM
        # keeps building the router from asking Ollama for the model's context window
        self.router = RouterQueryEngine(selector=selector, query_engine_tools=self.tools, llm=MockLLM())

    @classmethod
    def from_services(cls, services: ChatServices) -> ChatEngine:
        config = services.settings.decision_engine
        engines = {name: engine_for(name, s, services) for name, s in config.strategies.items()}
        return cls(services=services, selector=IntentSelector.from_settings(services.settings, gate=services.gate),
                   engines=engines)

    @property
    def gate(self) -> LLMGate:
        return self.services.gate

    @property
    def interview(self) -> str | None:
        """The name of the interview strategy (the one without retrieval), if one is configured."""
        return next((name for name, e in self.engines.items() if isinstance(e, InterviewEngine)), None)

    def sticky(self, request: ChatRequest) -> Selection | None:
        """While a draft is open, follow-ups ("Ergänze bitte: Budget 200 Euro") stay in the interview; only a
        trigger keyword of another strategy (a clear change of topic) leaves it, and the reason says so."""
        interview = self.interview
        if not request.draft_open or interview is None:
            return None
        hit = keyword_or_none(self.selector.matcher, request.message)
        if hit is None or hit.strategy == interview:
            return Selection(interview, "a draft is open: follow-ups stay in the interview until it is saved "
                                        "or discarded")
        return Selection(hit.strategy, f"a draft is open, but {hit.reason}: the topic changed to {hit.strategy} "
                                       "(the draft stays open)")

    async def aroute(self, request: ChatRequest) -> Selection:
        """The strategy for a request: the override when given, the open draft's interview, else the
        selector's choice."""
        if request.strategy is not None:
            if request.strategy not in self.engines:
                raise QueryError(f"unknown strategy {request.strategy!r}; configured: {sorted(self.engines)}",
                                 field="strategy")
            return Selection(request.strategy, f"strategy '{request.strategy}' requested")
        sticky = self.sticky(request)
        if sticky is not None:
            return sticky
        names = [t.metadata.name or "" for t in self.tools]
        result = await self.selector.aselect([t.metadata for t in self.tools], request.message)
        return Selection(names[result.ind], result.reason)

    async def astream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        self.gate.recheck()   # a new message asks Ollama again at once, however recently it was down
        selection = await self.aroute(request)
        logger.info("chat routed to %s (%s)", selection.strategy, selection.reason)
        yield ChatEvent(kind="intent", data={"strategy": selection.strategy, "reason": selection.reason})
        turn = Turn(request=request, strategy=selection.strategy, reason=selection.reason)
        async for event in self.engines[selection.strategy].astream(turn):
            yield event

    async def achat(self, request: ChatRequest) -> ChatResponse:
        async for event in self.astream(request):
            if event.kind == "done":
                return ChatResponse.model_validate(event.data)
        raise RuntimeError("the chat stream ended without a done event")
