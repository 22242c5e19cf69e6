"""The chat's data: request, history turn, streamed event and final response (the HTTP and UI contract)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

# "sources" comes as soon as retrieval has finished (before any token), so a client can show them while the
# answer streams and keep them when generation fails or is stopped; "input_notice" (before retrieval) says that
# the message was longer than a search may be, and what was searched instead; "import_notice" (before "sources")
# what a search during an import covered
EventKind = Literal["intent", "input_notice", "import_notice", "retrieval", "graph", "scoring", "sources",
                    "generation", "token", "done", "error"]
MAX_MESSAGE_CHARS = 24_000   # a pasted page or two; the search itself uses at most MAX_TEXT_CHARS of it
MAX_HISTORY_TURNS = 200


class ChatTurn(BaseModel):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_MESSAGE_CHARS)


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)   # strict: "yes" or 1 is no boolean, "5" no count

    message: str = Field(max_length=MAX_MESSAGE_CHARS, description="the user's message (not blank)")
    history: list[ChatTurn] = Field(default_factory=list, max_length=MAX_HISTORY_TURNS,
                                    description="earlier turns, oldest first")
    strategy: str | None = Field(None, max_length=100, description="override the router with a configured strategy")
    mode: Literal["semantic", "hybrid"] | None = None
    top_k: StrictInt | None = Field(None, ge=1, le=50)
    expand_depth: StrictInt | None = Field(None, ge=0, le=3)
    edge_types: list[str] | None = Field(None, max_length=50)
    draft_open: bool = Field(False, description="an interview draft is open in the client: follow-ups stay in "
                                                "the interview until it is saved or discarded")

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
    input_notice: str | None = Field(None, description="set when the message was cut to what a search can take")
    import_notice: str | None = Field(None, description="set while an import runs: what the search covered")
    cut_off: bool = Field(False, description="generation failed midway: `answer` is the part that arrived")
    generation_failed: bool = Field(False, description="Ollama was there and answered with an error: asking "
                                                       "again may work (not set when it is unreachable)")
    trace: dict[str, Any] = Field(default_factory=dict)


def format_history(turns: Sequence[ChatTurn], *, limit: int = 10) -> str:
    """The last `limit` turns as "Nutzer: ..." / "Assistent: ..." lines for a prompt."""
    names = {"user": "Nutzer", "assistant": "Assistent"}
    return "\n".join(f"{names[t.role]}: {t.content.strip()}" for t in list(turns)[-limit:]) or "(noch nichts)"

