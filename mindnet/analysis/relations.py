"""The relation kind of a suggested link, by rules first (config/analysis.yaml), optionally refined by the LLM.

Rules, in order: a cue phrase shortly before a place where the text names the note, in the same sentence
("hängt ab von", "depends on" -> depends_on; the nearest phrase wins), a rule on the types of both ends
(task -> project: part_of), the source type's `edge_defaults` from types.yaml, and `related_to`.
Without an LLM the rules are the answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from mindnet.analysis.models import Relation, Span
from mindnet.settings import AnalysisRelations, TypesConfig

log = logging.getLogger(__name__)

FALLBACK = "related_to"
CONFIDENCE = {"cue": 0.8, "type_pair": 0.6, "edge_default": 0.5, "fallback": 0.3, "llm": 0.75}
_BOUNDARY = re.compile(r"\n\s*\n|[.!?](?=\s)")   # a cue counts within the mention's sentence


@dataclass(frozen=True)
class Cue:
    kind: str
    phrase: str
    pattern: re.Pattern[str]


class RelationRules:
    def __init__(self, config: AnalysisRelations, types: TypesConfig) -> None:
        self.config = config
        self.types = types

    @cached_property
    def cues(self) -> list[Cue]:
        out = []
        for kind, phrases in self.config.cues.items():
            for phrase in phrases:
                words = r"\s+".join(re.escape(w) for w in phrase.casefold().split())
                out.append(Cue(kind, phrase, re.compile(rf"(?<!\w){words}(?!\w)")))
        return out

    @property
    def kinds(self) -> list[str]:
        """Every kind the rules can give (the LLM must choose among these)."""
        kinds = [*self.config.cues, *(r.kind for r in self.config.type_pairs),
                 *(k for spec in self.types.types.values() for k in spec.edge_defaults), FALLBACK]
        return list(dict.fromkeys(kinds))

    def _cue_near(self, text: str, span: Span) -> tuple[Cue, int] | None:
        """The cue phrase nearest before `span`, within the window and the same sentence: (cue, distance).
        Only before: in "A basiert auf B" the text relates to B (the cue's object), not to A (its subject)."""
        before = text[max(0, span.start - self.config.window_chars):span.start]
        breaks = list(_BOUNDARY.finditer(before))
        if breaks:
            before = before[breaks[-1].end():]
        before = before.casefold()
        best: tuple[Cue, int] | None = None
        for cue in self.cues:
            for m in cue.pattern.finditer(before):
                distance = len(before) - m.end()
                if best is None or distance < best[1]:
                    best = (cue, distance)
        return best

    def classify(self, *, text: str, spans: Sequence[Span], source_type: str, target_type: str) -> Relation:
        found = [c for c in (self._cue_near(text, s) for s in spans) if c is not None]
        if found:
            cue, distance = min(found, key=lambda c: c[1])
            return Relation(kind=cue.kind, confidence=CONFIDENCE["cue"], rule="cue",
                            reason=f"'{cue.phrase}' {distance} characters from the mention")
        for rule in self.config.type_pairs:
            if rule.source in ("*", source_type) and rule.target in ("*", target_type):
                return Relation(kind=rule.kind, confidence=CONFIDENCE["type_pair"], rule="type_pair",
                                reason=f"a {source_type} linking a {target_type} (type rule "
                                       f"{rule.source} -> {rule.target})")
        spec = self.types.types.get(source_type)
        defaults = [k for k in (spec.edge_defaults if spec else []) if k != "references"]
        if defaults:
            return Relation(kind=defaults[0], confidence=CONFIDENCE["edge_default"], rule="edge_default",
                            reason=f"default edge of type '{source_type}' (types.yaml edge_defaults)")
        return Relation(kind=FALLBACK, confidence=CONFIDENCE["fallback"], rule="fallback",
                        reason="no cue phrase or type rule applies")


LINE = re.compile(r"^\s*(\d+)\s*[:.)-]\s*([A-Za-z_][\w-]*)", re.MULTILINE)


def parse_llm_kinds(reply: str, count: int, kinds: Sequence[str]) -> dict[int, str]:
    """`N: kind` lines of an LLM reply -> {index: kind}; unknown kinds and numbers are ignored."""
    allowed = {k.lower() for k in kinds}
    out: dict[int, str] = {}
    for m in LINE.finditer(reply or ""):
        index, kind = int(m.group(1)), m.group(2).lower()
        if 1 <= index <= count and kind in allowed and index not in out:
            out[index] = kind
    return out


def refined(rule: Relation, llm_kind: str | None) -> Relation:
    if llm_kind is None:
        return rule
    if llm_kind == rule.kind:
        return rule.model_copy(update={"confidence": max(rule.confidence, 0.85),
                                       "reason": f"{rule.reason}; the LLM agrees"})
    return Relation(kind=llm_kind, confidence=CONFIDENCE["llm"], rule="llm",
                    reason=f"the LLM chose {llm_kind} (rules: {rule.kind}, {rule.reason})")
