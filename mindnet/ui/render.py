"""Markdown for the chat UI, built from what the core returns (hits, chat events, logs, import reports).

Pure functions, no Chainlit: the app modules only send what these return. Note text is data, never markup:
every title, path and reason goes through `mindnet.ui.escaping` (escaping, code spans, images as plain links).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from mindnet.chat.engine import ChatRequest, ChatTurn
from mindnet.chat.strategies import PASSAGES_SHOWN, snippet
from mindnet.retrieval.results import highlight_words, shown_name, written_title
from mindnet.ui.escaping import escape, images_as_links, inline_markdown
from mindnet.ui.why import keyword_only, why_props
from mindnet.wording import plural

MAX_EDGES = 8


def badge(intent: str) -> str:
    return f"`{intent.upper().replace('`', '')}`"


def open_url(path: str) -> str:
    """The server's redirect to `obsidian://open?...` (Markdown renderers drop the obsidian: scheme)."""
    return f"/open?path={quote(path, safe='')}"


def sources_title(question: str, count: int) -> str:
    """Title of the side panel that shows one answer's sources."""
    short = question if len(question) <= 60 else question[:57] + "..."
    return f"{count} source{'s' if count != 1 else ''} for: {short}"


def source_name(index: int) -> str:
    """Element name of a source: its number. Chainlit turns every "[n]" in the answer into a link to it, so
    the answer's citations open their source; a title never goes into a name (it may hold Markdown)."""
    return f"[{index}]"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _num(b: Mapping[str, Any], key: str) -> float | None:
    v = b.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def breakdown_line(b: Mapping[str, Any] | None) -> str:
    """ "semantic 0.900 + links 0.180 + centrality 0.200 = 1.280": the three terms the total is made of."""
    if not b:
        return "no breakdown"
    return (f"semantic {_fmt(b.get('semantic_term'))} + links {_fmt(b.get('edge_term'))} + "
            f"centrality {_fmt(b.get('centrality_term'))} = {_fmt(b.get('total'))}")


def breakdown_rows(b: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The table behind `breakdown_line`: per term its input, weight and result (the same numbers)."""
    if not b:
        return []
    # the words of the "why" sentences (mindnet.ui.why): match = S_sem, from similarity and keyword match
    sim = f"match {_fmt(b.get('semantic'))}"
    if keyword_only(b):       # no meaning vector yet: its words alone matched, not "similarity 1.000"
        sim = f"keyword match {_fmt(b.get('lexical'))}"
    elif _num(b, "dense") is not None and _num(b, "lexical") is not None:
        sim += f" (similarity {_fmt(b.get('dense'))}, keyword match {_fmt(b.get('lexical'))})"
    elif _num(b, "dense") is not None:
        sim += f" (similarity {_fmt(b.get('dense'))})"
    sim += f" x type weight {_fmt(b.get('retriever_weight'))}"
    return [
        {"term": "semantic", "input": sim, "weight": _fmt(b.get("semantic_weight")),
         "value": _fmt(b.get("semantic_term"))},
        {"term": "links", "input": f"link bonus {_fmt(b.get('edge_bonus'))}", "weight": _fmt(b.get("edge_weight")),
         "value": _fmt(b.get("edge_term"))},
        {"term": "centrality", "input": f"PageRank {_fmt(b.get('centrality_bonus'))}",
         "weight": _fmt(b.get("centrality_weight")), "value": _fmt(b.get("centrality_term"))},
        {"term": "total", "input": "", "weight": "", "value": _fmt(b.get("total"))},
    ]


def rule_details(hit: Mapping[str, Any]) -> list[str]:
    """The technical reasons (scorer wording, edge rule ids and confidences) for the details toggle."""
    expl = hit.get("explanation") or {}
    lines = [str(r) for r in expl.get("reasons") or []]
    for e in list(expl.get("incoming") or []) + list(expl.get("outgoing") or []):
        lines.append(f"{e.get('direction')} {e.get('kind')} {e.get('other_id')}: rule {e.get('rule_id')}, "
                     f"confidence {_fmt(e.get('confidence'))}")
    return list(dict.fromkeys(lines))


def source_props(index: int, hit: Mapping[str, Any], *, query: str, query_id: str) -> dict[str, Any]:
    """Everything the SourcePanel element shows for one source (all plain data; the element escapes it)."""
    path = str(hit.get("path") or "")
    b = hit.get("score_breakdown") or {}
    return {
        "index": index, "title": shown_name(hit),      # the file name, a written title beside it
        "names": [str(n) for n in hit.get("names") or []], "path": path,
        "open_url": open_url(path) if path else "", "type": str(hit.get("type") or ""),
        "section": " > ".join(map(str, hit.get("heading_path") or [])),
        "score": _fmt(hit.get("score")), "breakdown": breakdown_line(b), "rows": breakdown_rows(b),
        **why_props(hit), "details": rule_details(hit), "text": str(hit.get("text") or ""),
        "highlight": highlight_words(query), "query_id": query_id,
        "node_id": str(hit.get("node_id") or hit.get("note_id") or ""), "rating": 0,
    }


def source_summary(index: int, hit: Mapping[str, Any]) -> str:
    """One line under the answer; "[n]" links to the source's panel (the element of that name)."""
    title = escape(hit.get("title") or hit.get("note_id") or "?")
    written = written_title(hit)          # the file name is the name; a written title stands beside it
    beside = f" ({escape(written)})" if written else ""
    return (f"- {source_name(index)} **{title}**{beside} · {escape(hit.get('path') or '')} · "
            f"score {_fmt(hit.get('score'))}")




_NOTE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(?:markdown|md)?[ \t]*\n\s*---[ \t]*\n.*?^ {0,3}\1[ \t]*$",
                         re.M | re.S | re.I)


def without_note_block(text: str) -> str:
    """An interview reply without the note's fenced block (the note is shown in the draft editor)."""
    stripped = _NOTE_FENCE.sub("", text).strip()
    return stripped or "Here is the draft of your note."


def passages_markdown(sources: list[Mapping[str, Any]]) -> str:
    """The answer without an LLM, for the screen: the best passages as literal text (note Markdown is not
    rendered: its links and images would be live), each under its "[n]", which links to the source panel."""
    if not sources:
        return "No matching passages were found in your notes."
    lines = ["The most relevant passages from your notes:"]
    lines += [f"- {source_name(i)} {escape(snippet(s))}" for i, s in enumerate(sources[:PASSAGES_SHOWN], 1)]
    return "\n".join(lines)


CUT_OFF = "… _(cut off: the model stopped while answering)_"
STOPPED = "… _(stopped by you)_"


def answer_markdown(*, header: str, body: str, sources: list[Mapping[str, Any]], notice: str | None = None,
                    cut_off: bool = False, writing: bool = False, stopped: bool = False) -> str:
    """The answer message: badge and reason, the answer (so far), a notice, the numbered sources. `stopped`:
    the user pressed Stop (not the model's doing, so not "cut off")."""
    parts = [header, ""]
    if body.strip():
        mark = STOPPED if stopped else CUT_OFF if cut_off else ""
        parts.append(images_as_links(body.rstrip()) + (" " + mark if mark else ""))
    elif writing:
        parts.append("_writing the answer..._")
    elif stopped:
        parts.append("_(stopped by you before the answer began)_")
    elif cut_off:
        parts.append("_(stopped before the answer began)_")
    else:
        parts.append("_(no answer generated)_")
    if notice:
        parts += ["", f"> ⚠ {inline_markdown(notice)}"]
    if sources:
        parts += ["", "**Sources**"] + [source_summary(i, h) for i, h in enumerate(sources, 1)]
    return "\n".join(parts)


# --------------------------------------------------------------------------- "How I answered"

HOW_TITLE = "How I answered"
STEP_TITLES: dict[str, str] = {
    "intent": "Intent routing", "retrieval": "Retrieval", "graph": "Graph expansion",
    "scoring": "Scoring", "sources": "Sources", "generation": "Generation",
}


def _ms(data: Mapping[str, Any]) -> str:
    v = data.get("ms")
    return f"{v:.0f} ms" if isinstance(v, int | float) else "?"


def how_sentence(kind: str, data: Mapping[str, Any]) -> str:
    """One sentence of the "How I answered" step for one engine event."""
    if kind == "intent":
        why = escape(data.get("reason") or "the router chose it")
        return f"I answered as **{escape(data.get('strategy'))}** because {why}."
    if kind == "retrieval":
        queries = data.get("queries") or []
        edges = data.get("edge_types")
        follow = ("all configured links" if not edges else ", ".join(escape(e) for e in edges))
        what = "; ".join(f"\"{escape(q)}\"" for q in queries) or "your message"
        return (f"I searched your notes for {what} ({escape(data.get('mode') or '?')} search, graph depth "
                f"{data.get('depth', '?')}, following {follow}) and found "
                f"{plural(_count(data.get('candidates')), 'candidate')} in {_ms(data)}.")
    if kind == "graph":
        seeds, nodes = _count(data.get("seeds")), _count(data.get("nodes"))
        if not nodes:
            return "The graph added nothing (no expansion)."
        return (f"The graph expanded {plural(seeds, 'top hit')} to {plural(nodes, 'linked note')} over "
                f"{plural(_count(data.get('edges')), 'link')} in {_ms(data)}.")
    if kind == "scoring":
        return f"Scoring and ranking took {_ms(data)}."
    if kind == "sources":
        n = len(data.get("sources") or [])
        if not n:
            return "No source matched."
        return f"I kept the best {n} source{'s' if n != 1 else ''}, numbered 1 to {n}."
    if kind == "generation":
        model = escape(data.get("model") or "?")
        if data.get("sources") == 0:     # nothing was found: not "from them"
            return f"The model {model} wrote the answer without a source from your notes."
        return f"The model {model} wrote the answer from them."
    return escape(data)


def step_output(kind: str, data: Mapping[str, Any]) -> str:
    """The detailed sub-step of one engine event (inside "How I answered")."""
    ms = f" in {data['ms']:.0f} ms" if isinstance(data.get("ms"), int | float) else ""
    if kind == "intent":
        return f"strategy **{escape(data.get('strategy'))}** - {escape(data.get('reason') or '')}"
    if kind == "retrieval":
        queries = data.get("queries") or []
        listed = "\n".join(f"- {escape(q)}" for q in queries)
        counted = f"{plural(len(queries), 'query', 'queries')}, {plural(data.get('candidates', 0), 'candidate')}"
        return f"{counted}{ms}\n{listed}".rstrip()
    if kind == "graph":
        return (f"{_count(data.get('seeds'))} seeds, {_count(data.get('nodes'))} notes, "
                f"{_count(data.get('edges'))} edges{ms}")
    if kind == "scoring":
        return f"scored{ms}"
    if kind == "sources":
        return "\n".join(source_summary(i, h) for i, h in enumerate(data.get("sources") or [], 1)) or "none"
    if kind == "generation":
        return f"model {escape(data.get('model') or '?')}"
    return escape(data)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list | tuple | set | dict) else int(value or 0)


def local_time(timestamp: object) -> str:
    """An ISO timestamp of the logs (UTC) as this machine's local time, "2025-06-01 14:03"."""
    try:
        when = datetime.fromisoformat(str(timestamp))
    except ValueError:
        return str(timestamp or "")[:16]
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone().strftime("%Y-%m-%d %H:%M")


def history_rows(records: Iterable[Mapping[str, Any]], limit: int = 10) -> list[dict[str, str]]:
    """The newest searches first, one per question: when (local time), query, strategy / mode, top hit."""
    rows, seen = [], set()
    for r in reversed(list(records)):
        text = str(r.get("query_text") or "").strip()
        if not text or text in seen:
            continue
        seen.add(text)
        hits = r.get("hits") or []
        top = (hits[0].get("title") or hits[0].get("note_id")) if hits else "-"
        rows.append({"when": local_time(r.get("timestamp")), "query": text, "top": str(top or "-"),
                     "how": " / ".join(str(x) for x in (r.get("strategy"), r.get("mode")) if x)})
        if len(rows) >= limit:
            break
    return rows


def history_markdown(rows: list[Mapping[str, str]]) -> str:
    if not rows:
        return "No searches yet."
    lines = ["**Recent searches** (local time; click one below to ask it again)", "",
             "| # | when | query | strategy / mode | top hit |", "|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        lines.append(f"| {i} | {escape(r['when'])} | {escape(r['query'])} | {escape(r['how'])} | "
                     f"{escape(r['top'])} |")
    return "\n".join(lines)


def import_markdown(report: Mapping[str, Any]) -> str:
    r = {k: report.get(k, 0) for k in ("notes", "new", "changed", "deleted", "chunks", "edges")}
    return (f"Import finished in {report.get('seconds_total', 0):.1f} s: {r['notes']} notes ({r['new']} new, "
            f"{r['changed']} changed, {r['deleted']} deleted), {r['chunks']} chunks, {r['edges']} edges.")


def _without_level(line: Any, level: str) -> str:
    line = str(line)
    return line[len(level) + 2:] if line.startswith(f"{level}: ") else line


def import_problems(report: Mapping[str, Any], limit: int = 30) -> list[str]:
    """The report's problems, one line each: skipped files, warnings, unresolved links."""
    # the report's lines already carry their level ("warning: a.md:3: ..."): said once, not "warning: warning:"
    lines = [f"skipped: {_without_level(x, 'error')}" for x in report.get("skipped") or []]
    lines += [f"warning: {_without_level(x, 'warning')}" for x in report.get("warnings") or []]
    lines += [f"unresolved link in {u.get('note')}: [[{u.get('link')}]]" for u in report.get("unresolved_links") or []
              if isinstance(u, Mapping)]
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


def import_report_markdown(report: Mapping[str, Any]) -> str:
    problems = import_problems(report)
    text = import_markdown(report)
    if problems:
        text += f"\n\n**{len(problems)} problem{'s' if len(problems) != 1 else ''}:**\n" + \
            "\n".join(f"- {escape(p)}" for p in problems)
    return text


def progress_markdown(*, done: int, total: int, texts: int, path: str, elapsed: float) -> str:
    """A running import: notes and texts embedded so far, and the time left at the rate so far."""
    if total == 0:
        return f"Re-importing ... checking the vault for changed notes ({elapsed:.0f} s)"
    eta = ""
    if 0 < done < total:
        eta = f", about {elapsed / done * (total - done):.0f} s left"
    return (f"Re-importing ... {done}/{total} changed notes, {texts} texts embedded{eta} "
            f"(last: {escape(path)})")


def draft_filename(draft: Mapping[str, Any]) -> str:
    title = re.sub(r"[^\w\- ]+", "", str(draft.get("title") or "draft"), flags=re.UNICODE).strip() or "draft"
    return f"{title}.md"


def chat_request(message: str, history: list[Mapping[str, Any]], settings: Mapping[str, Any] | None,
                 *, draft_open: bool = False) -> ChatRequest:
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
        edge_types=list(pick("edge_types")) if pick("edge_types") else None, draft_open=draft_open)
