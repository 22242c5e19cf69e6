"""Save & Analyze in the chat: the draft editor's suggestions panel (action `draft_analyze`) and `/suggest`.

Wiring and rendering only: the analysis is `Mindnet.aanalyze`. Nothing here writes a note; the editor inserts a
suggestion into the draft's text itself, and `/suggest` only shows the list (with the command that writes it).
"""

from __future__ import annotations

import logging
from typing import Any

import chainlit as cl

from mindnet.analysis.models import AnalysisResult, LinkSuggestion
from mindnet.errors import MindnetError
from mindnet.ui.registry import get_mindnet

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


def suggestions_markdown(result: AnalysisResult) -> str:
    src = result.source
    lines = [f"**Suggestions for {_md(src.title)}** ({_md(src.path or 'draft')})", ""]
    if not result.links:
        lines.append("No links to suggest: the note links what it names, and nothing else is close.")
    for i, s in enumerate(result.links, 1):
        lines.append(f"{i}. `{s.relation.kind}` → **{_md(s.title)}** ({s.confidence:.2f}): {_md(s.reason)}; "
                     f"kind: {_md(s.relation.reason)}")
    if result.type:
        lines += ["", f"Type: **{_md(result.type.value)}** ({result.type.confidence:.2f}, {_md(result.type.reason)})"]
    if result.tags:
        lines.append("Tags: " + ", ".join(f"`#{t.tag}` ({t.confidence:.2f})" for t in result.tags))
    if result.duplicate:
        d = result.duplicate
        lines.append(f"Possible duplicate: **{_md(d.title)}** ({_md(d.path)}): {_md(d.reason)}")
    if src.kind == "note" and result.links:
        lines += ["", f"Nothing was written. To add these edges to the note: "
                      f"`mindnet suggest \"{src.path}\" --apply` (shows the diff, asks, keeps a backup)."]
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
    """`/suggest PATH` (a note id or vault path), or `/suggest` alone for the last answer's top source."""
    ref = argument.strip() or last_top_source()
    if not ref:
        await cl.Message(content="Which note? Type `/suggest` and a note path, e.g. `concepts/qdrant.md`, or ask "
                                 "a question first: `/suggest` alone takes the answer's top source.",
                         author="mindnet").send()
        return
    result = await get_mindnet().aanalyze(note=ref)
    await cl.Message(content=suggestions_markdown(result), author="mindnet").send()
