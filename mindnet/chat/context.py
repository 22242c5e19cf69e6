"""What every strategy engine needs for one turn: the shared services and the routed request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mindnet.chat.llm import LLMGate
from mindnet.chat.models import ChatRequest
from mindnet.logs import FlywheelLogs
from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.retriever import RetrievalResult
from mindnet.settings import Settings


class Searcher(Protocol):
    async def asearch(self, request: QueryRequest) -> RetrievalResult: ...


Recorder = Callable[..., str]   # Mindnet.record(request, result, *, source, strategy) -> query_id


@dataclass
class ChatServices:
    settings: Settings
    retriever: Searcher
    gate: LLMGate
    record: Recorder
    logs: FlywheelLogs
    progress: Callable[[], Mapping[str, Any]] | None = None   # ImportProgress.as_dict of the index's imports

    @property
    def prompts_dir(self) -> Path:
        return self.settings.prompts_dir


@dataclass(frozen=True)
class Turn:
    """A request after routing: the strategy that handles it and why."""

    request: ChatRequest
    strategy: str
    reason: str
