"""The chat engine: route a message, run its strategy, stream the steps and tokens, log the search.

`ChatEngine.astream` yields `ChatEvent`s (intent, retrieval, graph, scoring, generation, token ..., done);
`achat` consumes it and returns the final `ChatResponse`. The HTTP API and the Chainlit UI use only these.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

logger = logging.getLogger(__name__)

EventKind = Literal["intent", "retrieval", "graph", "scoring", "generation", "token", "done", "error"]


class ChatTurn(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(description="the user's message (not blank)")
    history: list[ChatTurn] = Field(default_factory=list, description="earlier turns, oldest first")
    strategy: str | None = Field(None, description="override the router with a configured strategy")
    mode: Literal["semantic", "hybrid"] | None = None
    top_k: int | None = Field(None, ge=1, le=50)
    expand_depth: int | None = Field(None, ge=0, le=3)
    edge_types: list[str] | None = None

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message is blank; write a question or a request")
        return value


class ChatEvent(BaseModel):
    kind: EventKind
    data: dict[str, Any] = Field(default_factory=dict)


class ChatResponse(BaseModel):
    query_id: str
    answer: str
    intent: str
    reason: str
    sources: list[dict[str, Any]] = Field(default_factory=list)
    draft: dict[str, Any] | None = None
    generation_available: bool = True
    notice: str | None = None
    trace: dict[str, Any] = Field(default_factory=dict)


class ChatEngine:
    """Placeholder until the implementation lands (see below)."""

    async def astream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:  # pragma: no cover
        raise NotImplementedError
        yield  # noqa

    async def achat(self, request: ChatRequest) -> ChatResponse:  # pragma: no cover
        raise NotImplementedError
