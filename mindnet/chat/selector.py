"""The intent router's selector: trigger keywords first (longest wins), then the LLM, then the default.

`IntentSelector` is a LlamaIndex `BaseSelector`: the `RouterQueryEngine` hands it one `ToolMetadata` per
strategy (the tool's name is the strategy's name) and gets back the chosen index with its reason.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata

from mindnet.chat.keywords import KeywordMatcher
from mindnet.chat.llm import LLMGate
from mindnet.chat.prompts import load_prompt
from mindnet.errors import LLMUnavailableError
from mindnet.settings import DecisionEngineConfig, Settings, Strategy

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[A-Za-z_]+")
_MAX_SHOWN = 60


def llm_trouble(exc: LLMUnavailableError) -> str:
    """Why the router had no LLM answer, told apart: Ollama answered with an error vs. could not be asked."""
    return "LLM failed (Ollama answered with an error)" if exc.failed else "LLM unreachable"


@dataclass(frozen=True)
class Selection:
    strategy: str
    reason: str


def strategy_list(strategies: Mapping[str, Strategy]) -> str:
    """The `{strategies}` block of the router prompt: one "- NAME: description" line per strategy."""
    return "\n".join(f"- {name}: {' '.join(s.description.split())}" for name, s in strategies.items())


def parse_llm_choice(answer: str, names: Sequence[str]) -> str | None:
    """The one strategy name in the LLM's answer, or None when it names none or several."""
    known = {n.upper(): n for n in names}
    found = list(dict.fromkeys(known[w.upper()] for w in _WORD.findall(answer) if w.upper() in known))
    return found[0] if len(found) == 1 else None


def _shown(answer: str) -> str:
    text = " ".join(answer.split())
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


def keyword_or_none(matcher: KeywordMatcher, message: str) -> Selection | None:
    hit = matcher.match(message)
    return Selection(hit.strategy, hit.reason) if hit else None


def from_llm_answer(answer: str, names: Sequence[str], default: str) -> Selection:
    choice = parse_llm_choice(answer, names)
    if choice is not None:
        return Selection(choice, f"no keyword; LLM said '{choice}'")
    return Selection(default, f"no keyword; LLM said '{_shown(answer)}', not one strategy -> default {default}")


def without_llm(default: str, why: str) -> Selection:
    return Selection(default, f"no keyword; {why} -> default {default}")


class IntentSelector(BaseSelector):
    """Keyword fast path, LLM classification as the slow path, the default strategy when both fail."""

    def __init__(self, *, config: DecisionEngineConfig, gate: LLMGate, router_prompt: BasePromptTemplate) -> None:
        self._config = config
        self._gate = gate
        self._prompt = router_prompt
        self._matcher = KeywordMatcher(config.strategies)

    @property
    def matcher(self) -> KeywordMatcher:
        return self._matcher

    @classmethod
    def from_settings(cls, settings: Settings, *, gate: LLMGate) -> IntentSelector:
        config = settings.decision_engine
        return cls(config=config, gate=gate, router_prompt=load_prompt(config.router_prompt, settings.prompts_dir))

    def _get_prompts(self) -> PromptDictType:
        return {"router": self._prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "router" in prompts:
            self._prompt = prompts["router"]

    # ------------------------------------------------------------------ selection

    def _router_prompt(self, message: str, names: Sequence[str]) -> str:
        strategies = {n: self._config.strategies[n] for n in names if n in self._config.strategies}
        return self._prompt.format(strategies=strategy_list(strategies), query_str=message)

    def _fast(self, message: str) -> Selection | None:
        hit = keyword_or_none(self._matcher, message)
        if hit is None and not self._config.llm_fallback_enabled:
            return without_llm(self._config.default_strategy, "LLM fallback disabled")
        return hit

    def choose(self, message: str, names: Sequence[str]) -> Selection:
        fast = self._fast(message)
        if fast is not None:
            return fast
        try:
            answer = self._gate.complete(self._router_prompt(message, names))
        except LLMUnavailableError as exc:
            return without_llm(self._config.default_strategy, llm_trouble(exc))
        return from_llm_answer(answer, names, self._config.default_strategy)

    async def achoose(self, message: str, names: Sequence[str]) -> Selection:
        fast = self._fast(message)
        if fast is not None:
            return fast
        try:
            answer = await self._gate.acomplete(self._router_prompt(message, names))
        except LLMUnavailableError as exc:
            return without_llm(self._config.default_strategy, llm_trouble(exc))
        return from_llm_answer(answer, names, self._config.default_strategy)

    @staticmethod
    def _result(selection: Selection, names: list[str]) -> SelectorResult:
        return SelectorResult(selections=[SingleSelection(index=names.index(selection.strategy),
                                                          reason=selection.reason)])

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        names = [c.name or "" for c in choices]
        return self._result(self.choose(query.query_str, names), names)

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        names = [c.name or "" for c in choices]
        return self._result(await self.achoose(query.query_str, names), names)

