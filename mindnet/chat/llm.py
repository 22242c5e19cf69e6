"""The chat's access to the generating LLM (Ollama): a cheap, cached reachability check and calls that
turn Ollama's own errors into `LLMUnavailableError`.

A down Ollama must not cost a timeout per message: `status()` asks `/api/tags` (short timeout) and keeps
the answer for `ttl` seconds; a call that fails to connect marks the LLM down for the same time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cached_property

import httpx
import ollama
from llama_index.core.llms import LLM, ChatMessage, MessageRole

from mindnet.backends import make_llm
from mindnet.errors import LLMUnavailableError
from mindnet.settings import Settings

logger = logging.getLogger(__name__)

LLM_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, httpx.TransportError, ollama.ResponseError)
PROBE_TIMEOUT = 2.0


@dataclass(frozen=True)
class LLMStatus:
    available: bool
    reason: str = ""
    checked_at: float = 0.0
    failed: bool = False      # Ollama is up and answered a call with an error (not: unreachable, no such model)


def _tagged(name: str) -> str:
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def status_from_tags(payload: object, model: str, url: str) -> LLMStatus:
    """Whether `model` is among the models of an `/api/tags` answer."""
    models = payload.get("models", []) if isinstance(payload, dict) else []
    names = {_tagged(str(m.get("name") or m.get("model") or "")) for m in models if isinstance(m, dict)}
    if _tagged(model) in names:
        return LLMStatus(True, checked_at=time.monotonic())
    return LLMStatus(False, f"model '{model}' is not available in Ollama at {url}", time.monotonic())


def unavailable_notice(settings: Settings, reason: str) -> str:
    """The user-facing line when generation cannot start: why, and the one step that fixes it."""
    if "unreachable" in reason:
        fix = (f"start Ollama (`ollama serve`) or point MINDNET_OLLAMA_URL at it (now {settings.ollama_url}); "
               f"the next message checks again")
    elif "is not available in Ollama" in reason:
        fix = f"pull the model (`ollama pull {settings.llm_model}`) or set MINDNET_LLM_MODEL"
    else:
        fix = "check Ollama's log; the next message tries again"
    return f"Answer generation is unavailable ({reason}). To enable it: {fix}."


def interrupted_notice(reason: str) -> str:
    """The user-facing line when the model failed after it had started answering."""
    return (f"The model failed while answering ({reason}), so the answer is cut off. "
            f"Send the message again to retry.")


class LLMGate:
    """The chat LLM plus a cached answer to "can it generate right now?"."""

    def __init__(self, *, settings: Settings, ttl: float = 30.0, llm: LLM | None = None) -> None:
        self.settings = settings
        self.ttl = ttl
        self._llm = llm
        self._status: LLMStatus | None = None

    @property
    def model(self) -> str:
        return self.settings.llm_model

    @cached_property
    def llm(self) -> LLM:
        return self._llm or make_llm(self.settings)

    # ------------------------------------------------------------------ reachability

    def _fresh(self) -> LLMStatus | None:
        s = self._status
        return s if s is not None and time.monotonic() - s.checked_at < self.ttl else None

    def recheck(self) -> None:
        """Forget a cached "unavailable", so the next call asks Ollama again (a new message should not wait
        out the cache after Ollama is back); a cached "available" stays."""
        if self._status is not None and not self._status.available:
            self._status = None

    def _remember(self, status: LLMStatus) -> LLMStatus:
        if not status.available:
            logger.info("LLM unavailable: %s", status.reason)
        self._status = status
        return status

    def _unreachable(self, exc: BaseException) -> LLMStatus:
        return LLMStatus(False, f"Ollama at {self.settings.ollama_url} is unreachable: "
                                f"{type(exc).__name__}", time.monotonic())

    def status(self) -> LLMStatus:
        cached = self._fresh()
        if cached is not None:
            return cached
        try:
            with httpx.Client(timeout=PROBE_TIMEOUT) as client:
                payload = client.get(f"{self.settings.ollama_url.rstrip('/')}/api/tags").json()
        except (httpx.HTTPError, ValueError) as exc:
            return self._remember(self._unreachable(exc))
        return self._remember(status_from_tags(payload, self.model, self.settings.ollama_url))

    async def astatus(self) -> LLMStatus:
        cached = self._fresh()
        if cached is not None:
            return cached
        try:
            async with httpx.AsyncClient(timeout=PROBE_TIMEOUT) as client:
                payload = (await client.get(f"{self.settings.ollama_url.rstrip('/')}/api/tags")).json()
        except (httpx.HTTPError, ValueError) as exc:
            return self._remember(self._unreachable(exc))
        return self._remember(status_from_tags(payload, self.model, self.settings.ollama_url))

    def mark_down(self, exc: BaseException) -> LLMUnavailableError:
        """Remember a failed call and return the error to raise."""
        if isinstance(exc, ollama.ResponseError):
            status = LLMStatus(False, f"Ollama answered with an error: {exc.error}", time.monotonic(), failed=True)
        else:
            status = self._unreachable(exc)
        self._remember(status)
        return LLMUnavailableError(status.reason, failed=status.failed)

    def _require(self, status: LLMStatus) -> None:
        if not status.available:
            raise LLMUnavailableError(status.reason, failed=status.failed)

    # ------------------------------------------------------------------ calls

    @staticmethod
    def messages(prompt: str, system: str | None = None) -> list[ChatMessage]:
        head = [ChatMessage(role=MessageRole.SYSTEM, content=system)] if system else []
        return [*head, ChatMessage(role=MessageRole.USER, content=prompt)]

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        self._require(self.status())
        try:
            return self.llm.chat(self.messages(prompt, system)).message.content or ""
        except LLM_ERRORS as exc:
            raise self.mark_down(exc) from exc

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        self._require(await self.astatus())
        try:
            return (await self.llm.achat(self.messages(prompt, system))).message.content or ""
        except LLM_ERRORS as exc:
            raise self.mark_down(exc) from exc

    async def astream(self, prompt: str, *, system: str | None = None) -> AsyncIterator[str]:
        """The answer's text pieces as they arrive; LLMUnavailableError when it fails (maybe midway)."""
        self._require(await self.astatus())
        started = False
        try:
            stream = await self.llm.astream_chat(self.messages(prompt, system))
            async for part in stream:
                if part.delta:
                    started = True
                    yield part.delta
        except LLM_ERRORS as exc:
            if started and isinstance(exc, ollama.ResponseError):
                # Ollama is up and said why it stopped: that is not "unreachable", nothing to remember
                raise LLMUnavailableError(f"Ollama answered with an error: {exc.error}", failed=True) from exc
            raise self.mark_down(exc) from exc
