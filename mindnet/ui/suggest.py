"""Save & Analyze in the chat: the draft editor's suggestions panel (action `draft_analyze`) and `/suggest`.

Wiring and rendering only: the analysis is `Mindnet.aanalyze`. Nothing here writes a note; the editor inserts a
suggestion into the draft's text itself, and `/suggest` shows the list with an Apply button per suggestion and one
for all (`suggest_apply`: a diff preview first, then the write of `mindnet suggest --apply`, then Undo).
"""

from __future__ import annotations

import logging
from typing import Any

import chainlit as cl

from mindnet.analysis.models import AnalysisResult, LinkSuggestion
from mindnet.errors import MindnetError, NoteNotFoundError
from mindnet.ui.escaping import code_span
from mindnet.ui.registry import get_mindnet
from mindnet.ui.suggest_apply import apply_actions

log = logging.getLogger(__name__)

PANEL_LINKS = 8


def _md(text: object) -> str:
    """Plain text for Markdown: brackets and emphasis characters escaped."""
    out = str(text)
    for ch in "\\`*_[]<>|#":
        out = out.replace(ch, "\\" + ch)
    return out


def link_payload(s: LinkSuggestion) -> dict[str, Any]:
    first = s.mentions[0] if s.mentions else None
    return {"note_id": s.note_id, "title": s.title, "path": s.path, "kind": s.relation.kind,
            "confidence": s.confidence, "reason": s.reason, "kind_reason": s.relation.reason,
            "link_text": s.link_text, "callout": s.callout,
            "mention": {"start": first.start, "end": first.end, "surface": first.surface} if first else None}


def panel_payload(result: AnalysisResult) -> dict[str, Any]:
    """What the draft editor's panel shows: links (insert / dismiss), type, tags, a possible duplicate."""
    return {"links": [link_payload(s) for s in result.links[:PANEL_LINKS]],
            "type": result.type.model_dump() if result.type else None,
            "tags": [t.model_dump() for t in result.tags],
            "duplicate": result.duplicate.model_dump() if result.duplicate else None,
            "ms": result.timing_ms.get("total")}


def unique_links(links: list[LinkSuggestion]) -> list[LinkSuggestion]:
    """Each target note once (the first, best, suggestion for it)."""
    out: dict[str, LinkSuggestion] = {}
    for s in links:
        out.setdefault(s.note_id, s)
    return list(out.values())


def numbers(ns: list[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    runs: list[list[int]] = []
    for n in ns:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def grouped(reasons: list[str]) -> dict[str, list[int]]:
    """reason -> the 1-based numbers of the suggestions that give it, in the order first given."""
    out: dict[str, list[int]] = {}
    for i, reason in enumerate(reasons, 1):
        out.setdefault(reason, []).append(i)
    return out


def suggestions_markdown(result: AnalysisResult) -> str:
    """Each suggestion once with its reason; a reason shared by several is said once, with their numbers."""
    src = result.source
    links = unique_links(result.links)
    lines = [f"**Suggestions for {_md(src.title)}** ({_md(src.path or 'draft')})", ""]
    if not links:
        lines.append("No links to suggest: the note links what it names, and nothing else is close.")
    why = grouped([s.reason for s in links])
    for i, s in enumerate(links, 1):
        own = f": {_md(s.reason)}" if len(why[s.reason]) == 1 else ""
        lines.append(f"{i}. `{s.relation.kind}` → **{_md(s.title)}** ({s.confidence:.2f}){own}")
    shared = [(r, ns) for r, ns in why.items() if len(ns) > 1]
    if shared:
        lines += ["", "Why:"] + [f"- {numbers(ns)}: {_md(r)}" for r, ns in shared]
    kinds = grouped([f"`{s.relation.kind}`: {_md(s.relation.reason)}" for s in links])
    if kinds:
        lines += ["", "Why these kinds:"] + [f"- {numbers(ns)}: {r}" for r, ns in kinds.items()]
    if result.type:
        lines += ["", f"Type: **{_md(result.type.value)}** ({result.type.confidence:.2f}, {_md(result.type.reason)})"]
    if result.tags:
        lines.append("Tags: " + ", ".join(f"`#{t.tag}` ({t.confidence:.2f})" for t in result.tags))
    if result.duplicate:
        d = result.duplicate
        lines.append(f"Possible duplicate: **{_md(d.title)}** ({_md(d.path)}): {_md(d.reason)}")
    if src.kind == "note" and links:
        lines += ["", "Nothing is written yet. **Apply** shows the change to the note first; a backup is kept."]
    return "\n".join(lines)


@cl.action_callback("draft_analyze")
async def on_draft_analyze(action: cl.Action) -> dict[str, Any]:
    """Suggestions for the draft's current text (rules only for the relation kinds: this runs while typing)."""
    payload = action.payload or {}
    text = payload.get("markdown")
    if not isinstance(text, str) or not text.strip():
        return {"links": [], "type": None, "tags": [], "duplicate": None}
    mindnet = get_mindnet()
    note_type = payload.get("note_type")
    note_type = note_type if isinstance(note_type, str) and note_type in mindnet.settings.types.types else None
    try:
        result = await mindnet.aanalyze(text=text, note_type=note_type, llm=False)
    except MindnetError as exc:
        return {"error": str(exc)}
    return panel_payload(result)


def last_top_source() -> str | None:
    sources = cl.user_session.get("last_sources") or []
    top = sources[0] if sources else None
    return (top.get("path") or top.get("note_id")) if isinstance(top, dict) else None


async def suggest_command(argument: str) -> None:
    """`/suggest NOTE` (a vault path or a note's title), or `/suggest` alone for the last answer's top source."""
    ref = argument.strip() or last_top_source()
    if not ref:
        await cl.Message(content="Which note? Type `/suggest` and a note's path in the vault or its title, e.g. "
                                 "`/suggest concepts/qdrant.md`, or ask a question first: `/suggest` alone takes "
                                 "the answer's top source.", author="mindnet").send()
        return
    try:
        result = await get_mindnet().aanalyze(note=ref)
    except NoteNotFoundError:
        await cl.Message(content=f"No note {code_span(ref)} in the vault's index. Type a path in the vault (e.g. "
                                 "`concepts/qdrant.md`) or a note's title; a note added a moment ago is found after "
                                 "`/reimport`.", author="mindnet").send()
        return
    links = unique_links(result.links)
    actions = apply_actions(result.source.path, links) if result.source.kind == "note" else []
    await cl.Message(content=suggestions_markdown(result), author="mindnet", actions=actions).send()
