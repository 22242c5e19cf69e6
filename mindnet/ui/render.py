"""Markdown for the chat UI, built from what the core returns (hits, chat events, logs, import reports).

Pure functions, no Chainlit: the app module only sends what these return. Note text is data, never markup:
titles, paths and reasons are escaped (HTML entities and Markdown punctuation) and chunk text goes into a
fenced block longer than any backtick run inside it, so `<script>` in a note shows up as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mindnet.chat.engine import ChatRequest, ChatTurn

_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+!|~>:$])")   # ':' starts a directive, '$' math
MAX_EDGES = 8
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BACKTICKS = re.compile(r"`+")

STEP_TITLES: dict[str, str] = {
    "intent": "Intent routing", "retrieval": "Retrieval", "graph": "Graph expansion",
    "scoring": "Scoring", "generation": "Generation",
}


def escape(text: object) -> str:
    """`text` as literal inline Markdown: no HTML, no emphasis, no links."""
    out = "".join(_HTML.get(ch, ch) for ch in str(text if text is not None else ""))
    # '>' is already an entity; escape the remaining Markdown punctuation with backslashes
    return _MD_PUNCT.sub(r"\\\1", out).replace("\n", " ")


def code_block(text: str, info: str = "text") -> str:
    """A fenced block that shows `text` verbatim, whatever backticks it contains."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def badge(intent: str) -> str:
    return f"`{intent.upper().replace('`', '')}`"


def obsidian_uri(vault_root: Path, path: str) -> str:
    return f"obsidian://open?vault={quote(Path(vault_root).name, safe='')}&file={quote(path, safe='')}"


def sources_title(question: str, count: int) -> str:
    """Title of the side panel that shows one answer's sources."""
    short = question if len(question) <= 60 else question[:57] + "..."
    return f"{count} source{'s' if count != 1 else ''} for: {short}"


def source_name(index: int, hit: Mapping[str, Any]) -> str:
    """Element name of a source; the answer text refers to it so Chainlit links the side panel."""
    return f"[{index}] {hit.get('title') or hit.get('note_id') or hit.get('node_id')}"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "-"


def breakdown_line(b: Mapping[str, Any] | None) -> str:
    if not b:
        return "no breakdown"
    return (f"semantic {_fmt(b.get('semantic_term'))} + edge {_fmt(b.get('edge_term'))} + "
            f"centrality {_fmt(b.get('centrality_term'))} = {_fmt(b.get('total'))}")


def source_markdown(hit: Mapping[str, Any], *, vault_root: Path) -> str:
    """The side panel of one source: title, path, links, score, breakdown, why, related edges, chunk text."""
    path = str(hit.get("path") or "")
    lines = [f"### {escape(hit.get('title') or hit.get('note_id') or '?')}", ""]
    if path:
        lines += [f"**Path:** {escape(path)}  ", f"**File:** {escape((Path(vault_root) / path).as_posix())}  ",
                  f"**Open in Obsidian:** [{escape(path)}]({obsidian_uri(vault_root, path)})  "]
    if hit.get("type"):
        lines.append(f"**Type:** {escape(hit['type'])}  ")
    if hit.get("heading_path"):
        lines.append(f"**Section:** {escape(' > '.join(map(str, hit['heading_path'])))}  ")
    lines += [f"**Score:** {_fmt(hit.get('score'))}  ",
              f"**Breakdown:** {breakdown_line(hit.get('score_breakdown'))}", ""]
    b = hit.get("score_breakdown") or {}
    parts = [(k, b[k]) for k in ("semantic", "dense", "lexical", "retriever_weight", "edge_bonus",
                                 "centrality_bonus") if b.get(k) is not None]
    if parts:
        lines += ["| " + " | ".join(k for k, _ in parts) + " |", "|" + "---|" * len(parts),
                  "| " + " | ".join(_fmt(v) for _, v in parts) + " |", ""]
    expl = hit.get("explanation") or {}
    if expl.get("reasons"):
        lines += ["**Why:**"] + [f"- {escape(r)}" for r in expl["reasons"]] + [""]
    incoming, outgoing = list(expl.get("incoming") or []), list(expl.get("outgoing") or [])
    edges = incoming[:MAX_EDGES] + outgoing[:MAX_EDGES]
    if edges:
        lines += ["**Related edges:**"]
        for e in edges:
            arrow = "<-" if e.get("direction") == "incoming" else "->"
            lines.append(f"- {escape(arrow)} {escape(e.get('other_title') or e.get('other_id'))} "
                         f"({escape(e.get('kind'))}, confidence {_fmt(e.get('confidence'))})")
        more = len(incoming) + len(outgoing) - len(edges)
        if more > 0:
            lines.append(f"- ... and {more} more")
        lines.append("")
    if expl.get("via_graph"):
        lines += ["_found through graph expansion_", ""]
    lines += ["**Text:**", code_block(str(hit.get("text") or ""), "markdown")]
    return "\n".join(lines)


def source_summary(index: int, hit: Mapping[str, Any]) -> str:
    """One line under the answer; the bracketed name links to the side element of the same name."""
    return f"- {source_name(index, hit)} · {escape(hit.get('path') or '')} · score {_fmt(hit.get('score'))}"


def step_output(kind: str, data: Mapping[str, Any]) -> str:
    """What a Chainlit step shows for one engine event."""
    ms = f" in {data['ms']:.0f} ms" if isinstance(data.get("ms"), int | float) else ""
    if kind == "intent":
        return f"strategy **{escape(data.get('strategy'))}** - {escape(data.get('reason') or '')}"
    if kind == "retrieval":
        queries = data.get("queries") or []
        listed = "\n".join(f"- {escape(q)}" for q in queries)
        return f"{len(queries)} queries, {data.get('candidates', 0)} candidates{ms}\n{listed}".rstrip()
    if kind == "graph":
        return (f"{_count(data.get('seeds'))} seeds, {_count(data.get('nodes'))} notes, "
                f"{_count(data.get('edges'))} edges{ms}")
    if kind == "scoring":
        return f"scored{ms}"
    if kind == "generation":
        return f"model {escape(data.get('model') or '?')}"
    return escape(data)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list | tuple | set | dict) else int(value or 0)


def history_markdown(records: Iterable[Mapping[str, Any]], limit: int = 10) -> str:
    rows = list(records)[-limit:][::-1]
    if not rows:
        return "No searches yet."
    lines = ["**Recent searches**", "", "| when | query | strategy / mode | top hit |", "|---|---|---|---|"]
    for r in rows:
        hits = r.get("hits") or []
        top = hits[0].get("title") or hits[0].get("note_id") if hits else "-"
        how = " / ".join(str(x) for x in (r.get("strategy"), r.get("mode")) if x)
        when = str(r.get("timestamp", ""))[:19].replace("T", " ")
        lines.append(f"| {escape(when)} | {escape(r.get('query_text'))} | {escape(how)} | {escape(top)} |")
    return "\n".join(lines)


def import_markdown(report: Mapping[str, Any]) -> str:
    r = {k: report.get(k, 0) for k in ("notes", "new", "changed", "deleted", "chunks", "edges")}
    return (f"Import finished in {report.get('seconds_total', 0):.1f} s: {r['notes']} notes ({r['new']} new, "
            f"{r['changed']} changed, {r['deleted']} deleted), {r['chunks']} chunks, {r['edges']} edges.")


def draft_filename(draft: Mapping[str, Any]) -> str:
    title = re.sub(r"[^\w\- ]+", "", str(draft.get("title") or "draft"), flags=re.UNICODE).strip() or "draft"
    return f"{title}.md"


def chat_request(message: str, history: list[Mapping[str, Any]], settings: Mapping[str, Any] | None
                 ) -> ChatRequest:
    """The engine request for a chat message under the settings panel's values ("auto"/0/[] = default)."""
    s = dict(settings or {})

    def pick(key: str) -> Any:
        value = s.get(key)
        return None if value in (None, "", "auto", 0, 0.0, []) else value

    depth = s.get("expand_depth")
    return ChatRequest(
        message=message, history=[ChatTurn.model_validate(t) for t in history], strategy=pick("strategy"),
        mode=pick("mode"), top_k=int(pick("top_k")) if pick("top_k") else None,
        expand_depth=None if depth in (None, "", "auto") else int(depth),
        edge_types=list(pick("edge_types")) if pick("edge_types") else None)
