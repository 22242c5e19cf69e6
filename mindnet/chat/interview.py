"""INTERVIEW: no retrieval; the LLM asks for the missing fields of the target type's schema over several
turns and finally writes the note, which becomes a sanitized draft. Without an LLM: the schema's empty draft.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence

from mindnet.chat.context import ChatServices, Turn
from mindnet.chat.keywords import detect_target_type
from mindnet.chat.llm import interrupted_notice, unavailable_notice
from mindnet.chat.models import ChatEvent, ChatResponse, ChatTurn, format_history
from mindnet.chat.sanitizer import NoteDraft, empty_draft, normalize_meta_and_body
from mindnet.chat.strategies import StrategyEngine, done
from mindnet.errors import LLMUnavailableError
from mindnet.settings import InterviewSchema, Strategy, TypesConfig

logger = logging.getLogger(__name__)

# a ```markdown / ```md / bare fence whose content starts with '---', or a reply that starts with '---';
# possessive runs (*+) keep it linear on a fence line with thousands of blanks (quadratic before)
_NOTE_BLOCK = re.compile(r"^ {0,3}(`{3,}+|~{3,}+)[ \t]*+(markdown|md|yaml|yml)?[ \t]*+\n\s*+---[ \t]*$",
                         re.M | re.I)


def contains_note(reply: str) -> bool:
    """Does the reply hold a note (frontmatter in a code block, or the note itself)?"""
    return bool(_NOTE_BLOCK.search(reply)) or reply.lstrip().startswith("---\n")


def type_aliases(types: TypesConfig) -> dict[str, list[str]]:
    return {name: list(spec.aliases) for name, spec in types.types.items()}


def target_type(message: str, history: Sequence[ChatTurn], schemas: Mapping[str, InterviewSchema],
                aliases: Mapping[str, list[str]], default: str) -> str:
    """The note type named in the message, else in the latest user turn that names one, else `default`."""
    for text in [message, *(t.content for t in reversed(history) if t.role == "user")]:
        found = detect_target_type(text, schemas, aliases)
        if found:
            return found
    return default


def schema_text(note_type: str, schema: InterviewSchema) -> str:
    """The `{schema}` block of the interview prompt."""
    return "\n".join([
        f"type: {note_type}",
        f"required: {', '.join(schema.required) or '(none)'}",
        f"optional: {', '.join(schema.optional) or '(none)'}",
        f"sections: {', '.join(schema.sections) or '(none)'}",
    ])


def draft_dict(draft: NoteDraft) -> dict:
    return {"markdown": draft.to_markdown(), "note_type": draft.note_type, "title": draft.title,
            "warnings": list(draft.warnings)}


def title_from_message(message: str) -> str | None:
    """"Neues Projekt: Kräutergarten" names its note: the text after the first colon, if any."""
    _, sep, rest = message.partition(":")
    title = rest.strip().strip("\"'„“”").strip()
    return title[:120] if sep and title else None


class InterviewEngine(StrategyEngine):
    """Schema-driven interview; the context is the chat history."""

    def __init__(self, *, name: str, strategy: Strategy, services: ChatServices) -> None:
        super().__init__(name=name, strategy=strategy, services=services)

    def _target(self, turn: Turn) -> tuple[str, InterviewSchema]:
        settings = self._services.settings
        schemas = settings.decision_engine.schemas
        default = settings.types.default_type if settings.types.default_type in schemas else next(iter(schemas))
        name = target_type(turn.request.message, turn.request.history, schemas, type_aliases(settings.types),
                           default)
        return name, schemas[name]

    async def astream(self, turn: Turn) -> AsyncIterator[ChatEvent]:
        s = self._services
        note_type, schema = self._target(turn)
        query_id = s.logs.record_search(turn.request.message, mode="interview", source="chat", strategy=self.name)
        base = {"query_id": query_id, "intent": self.name, "reason": turn.reason, "sources": [],
                "trace": {"target_type": note_type}}

        status = await s.gate.astatus()
        if not status.available:
            yield done(self._offline(note_type, schema, unavailable_notice(s.settings, status.reason), base,
                                     title=title_from_message(turn.request.message)))
            return
        yield ChatEvent(kind="generation", data={"model": s.gate.model})
        prompt = self.generation_prompt(target_type=note_type, schema=schema_text(note_type, schema),
                                        history=format_history(turn.request.history), query_str=turn.request.message)
        pieces: list[str] = []
        try:
            async for piece in s.gate.astream(prompt, system=self.system_prompt):
                pieces.append(piece)
                yield ChatEvent(kind="token", data={"text": piece})
        except LLMUnavailableError as exc:
            if pieces:
                yield ChatEvent(kind="error", data={"message": f"generation stopped midway: {exc}"})
            notice = interrupted_notice(str(exc)) if pieces else unavailable_notice(s.settings, str(exc))
            yield done(self._offline(note_type, schema, notice, base,
                                     title=title_from_message(turn.request.message)))
            return
        reply = "".join(pieces).strip()
        draft = None
        if contains_note(reply):
            draft = draft_dict(normalize_meta_and_body(reply, note_type=note_type, schema=schema))
        yield done(ChatResponse(answer=reply, draft=draft, **base))

    @staticmethod
    def _offline(note_type: str, schema: InterviewSchema, notice: str, base: dict, *, title: str | None = None
                 ) -> ChatResponse:
        draft = empty_draft(note_type, schema, title=title)
        answer = (f"{notice}\n\nHere is an empty {note_type} note to fill in yourself:\n\n"
                  f"```markdown\n{draft.to_markdown()}```")
        return ChatResponse(answer=answer, draft=draft_dict(draft), generation_available=False, notice=notice,
                            **base)
