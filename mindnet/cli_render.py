"""Small rendering helpers of the command line: counts in words, excerpts with the question's words marked, paths
that fit the terminal, the `eval` table, the `check` problems and the LLM status of `suggest`.

Pure functions over plain data (what the core returns as dicts); no Python repr ever reaches the terminal. Note
text is data, never markup: it goes into `rich.text.Text` objects, so `[bold]` in a note shows up as written.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from mindnet.wording import plural  # also imported from here by the CLI

ELLIPSIS = "…"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fmt(value: Any, digits: int = 3) -> str:
    v = _number(value)
    return "-" if v is None else f"{v:.{digits}f}"


# ---------------------------------------------------------------------------- paths


def fit_path(path: str, width: int) -> str:
    """`path` within `width` characters, shortened at '/' only: leading folders give way to "…/" first, so the
    file name stays whole; only a file name longer than the width itself is cut (with "…" at its end)."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    for i in range(1, len(parts)):
        shortened = ELLIPSIS + "/" + "/".join(parts[i:])
        if len(shortened) <= width:
            return shortened
    name = parts[-1]
    return name if len(name) <= width else name[: max(width - 1, 0)] + ELLIPSIS


# ---------------------------------------------------------------------------- excerpts

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_CALLOUT = re.compile(r"^\s*(>\s*)+(\[![^\]]*\][+-]?\s*)?")
_LIST = re.compile(r"^\s*([-*+]|\d+[.)])\s+(\[[ xX]\]\s+)?")
# no run may cross a '[' or a line end: a note of 100,000 '[' is read in linear time (issue 27's hostile notes)
_WIKILINK = re.compile(r"!?\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\n]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


def _link_text(m: re.Match[str]) -> str:
    if m.group(2):
        return m.group(2)
    if m.group(1).startswith("rel:") and " " in m.group(1):    # [[rel:supports X]]: a typed link
        kind, target = m.group(1)[4:].split(" ", 1)
        return f"({kind.replace('_', ' ')}: {target.split('#', 1)[0]})"
    return m.group(1).split("#", 1)[0] or m.group(1).lstrip("#^")


def plain_text(markdown: str) -> str:
    """A chunk's Markdown as one line of running text: no headings (the title says it), no link brackets,
    emphasis, list or quote markers, code fences or frontmatter."""
    lines, in_fence = [], False
    body = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and _HEADING.match(line):
            continue
        line = _LIST.sub("", _CALLOUT.sub("", line))
        lines.append(line)
    text = " ".join(lines)
    text = _MDLINK.sub(r"\1", _WIKILINK.sub(_link_text, text))
    text = _EMPHASIS.sub("", text)
    text = " ".join(text.split())
    return text or " ".join(markdown.split())


def _hits_of(text: str, words: Sequence[str]) -> int:
    folded = text.casefold()
    return sum(1 for w in words if re.search(r"(?<![^\W_])" + re.escape(w), folded))


def excerpt_lines(text: str, words: Sequence[str], width: int, lines: int = 2) -> list[str]:
    """At most `lines` lines of at most `width` characters from `text` (Markdown): from the first sentence
    that holds the most of `words`, cut at a word with "…" where the text goes on."""
    plain = plain_text(text)
    sentences = _SENTENCE_END.split(plain)
    best = max(range(len(sentences)), key=lambda i: (_hits_of(sentences[i], words), -i)) if words else 0
    start = " ".join(sentences[:best]) if best else ""
    rest = " ".join(sentences[best:])
    if start:
        rest = ELLIPSIS + " " + rest
    width = max(width, 10)
    wrapped = textwrap.wrap(rest, width, break_long_words=True, break_on_hyphens=False)
    if len(wrapped) <= lines:
        return wrapped
    kept = wrapped[:lines]
    last = kept[-1]
    while len(last) + 2 > width and " " in last:   # room for " …"
        last = last.rsplit(" ", 1)[0]
    kept[-1] = (last if len(last) + 2 <= width else last[: width - 2]) + " " + ELLIPSIS
    return kept


def marked(line: str, words: Iterable[str], style: str = "bold") -> Text:
    """`line` as rich Text (never parsed as markup) with each word starting with one of `words` in `style`."""
    out = Text(line)
    words = [w for w in words if w]
    if not words:
        return out
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                         + r")[^\W_]*", re.I)
    for m in pattern.finditer(line):
        out.stylize(style, m.start(), m.end())
    return out


# ---------------------------------------------------------------------------- query


def breakdown_line(b: Mapping[str, Any] | None) -> str:
    """ "sem 0.974 (type x1.00) + edge 0.300 (bonus 1.00) + cent 0.022 = 1.296": the terms of a hit's score,
    the type weight (times the question's type intent) and the link bonus behind them."""
    if not b:
        return "no score breakdown"
    weight = (_number(b.get("retriever_weight")) or 0.0) * (_number(b.get("type_intent")) or 1.0)
    return (f"sem {_fmt(b.get('semantic_term'))} (type x{weight:.2f}) + edge {_fmt(b.get('edge_term'))} "
            f"(bonus {_fmt(b.get('edge_bonus'), 2)}) + cent {_fmt(b.get('centrality_term'))} "
            f"= {_fmt(b.get('total'))}")


def passages_note(hit: Mapping[str, Any]) -> str:
    """ "(+2 passages)": the note's other matching passages, or ""."""
    n = len(hit.get("passages") or [])
    return f"(+{plural(n, 'passage')})" if n else ""


# ---------------------------------------------------------------------------- eval

_METRIC_NAMES = {"dup@5": "dup@5"}
_METRIC_WORDS = {"dup@5": "share of the top 5 repeating a note"}


def short_mode(mode: str) -> str:
    """semantic -> sem, hybrid-d1 -> d1, plain stays plain."""
    if mode == "semantic":
        return "sem"
    m = re.fullmatch(r"hybrid-d(\d+)", mode)
    return f"d{m.group(1)}" if m else mode


def short_metric(name: str) -> str:
    """ndcg@10 -> nDCG@10, recall@5 -> R@5, mrr -> MRR."""
    if name.startswith("ndcg@"):
        return "nDCG@" + name[5:]
    if name.startswith("recall@"):
        return "R@" + name[7:]
    if name.startswith("mrr"):
        return "MRR" + name[3:]
    return _METRIC_NAMES.get(name, name)


def mode_legend(modes: Iterable[str]) -> str:
    words = {"semantic": "sem = semantic only", "plain": "plain = LlamaIndex vector retriever (the baseline)"}
    parts, hops = [], []
    for mode in modes:
        m = re.fullmatch(r"hybrid-d(\d+)", mode)
        if m:
            hops.append(m.group(1))
        elif mode in words:
            parts.append(words[mode])
        else:
            parts.append(mode)
    if hops:
        names = ", ".join(f"d{h}" for h in hops)
        parts.insert(1 if "semantic" in modes else 0,
                     f"{names} = hybrid following links {'/'.join(hops)} hops deep")
    return "modes: " + "; ".join(parts)


def _ms(value: Any) -> str:
    v = _number(value)
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def eval_table(data: Mapping[str, Any]) -> Table:
    """One row per mode, short names, three decimals: fits 80 columns with every number whole."""
    modes = data["modes"]
    first = next(iter(modes.values()), {})
    metrics = [k for k in first if k not in ("latency_ms", "latency_ratio")]
    t = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), show_edge=False, pad_edge=False)
    t.add_column("mode", no_wrap=True)
    for col in [short_metric(k) for k in metrics] + ["ms", "p95", "xplain"]:
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for mode, m in modes.items():
        lat, ratio = m.get("latency_ms") or {}, m.get("latency_ratio") or {}
        t.add_row(short_mode(mode), *(_fmt(m.get(k)) for k in metrics), _ms(lat.get("median")),
                  _ms(lat.get("p95")), _fmt(ratio.get("median"), 2))
    return t


def eval_title(data: Mapping[str, Any]) -> str:
    return (f"{data['dataset']}: {plural(data['docs'], 'note')}, {plural(data['queries'], 'query', 'queries')}; "
            f"embedding {data['embedding']}, top_k {data['top_k']}, graph depth {data['depth']}")


def eval_footer(data: Mapping[str, Any]) -> str:
    metrics = [k for k in next(iter(data["modes"].values()), {}) if k not in ("latency_ms", "latency_ratio")]
    names = ["R@k = recall@k"] if any(k.startswith("recall@") for k in metrics) else []
    names += [f"{k} = {_METRIC_WORDS[k]}" for k in metrics if k in _METRIC_WORDS]
    return (f"{mode_legend(data['modes'])}. {'; '.join(names + [''])}ms, p95: median and 95th percentile ms "
            f"per query; xplain: median time / plain's")


def shares(by_mode: Mapping[str, Any] | Any) -> str:
    """{"semantic": 0.25, "hybrid-d1": 0.5} -> "sem 25%, d1 50%" (a plain number as a percentage)."""
    if not isinstance(by_mode, Mapping):
        v = _number(by_mode)
        return "-" if v is None else f"{100 * v:.0f}%"
    return ", ".join(f"{short_mode(k)} {shares(v)}" for k, v in by_mode.items())


def counts_by_kind(counts: Mapping[str, Any]) -> str:
    """{"references": 3, "mentions": 1} -> "references 3, mentions 1"."""
    return ", ".join(f"{k} {v}" for k, v in counts.items())


# ---------------------------------------------------------------------------- check

CHECK_SHOWN = 20     # problems `check` names without --verbose

# what `check` reports as breaking the index, by its field name (the same in --json)
CHECK_KEYS = ("missing_collections", "dangling_edges", "orphan_chunks", "missing_chunks", "unlisted",
              "unfinished_notes", "missing_indexes", "unfinished_import")


def _problem(item: Any) -> str:
    if isinstance(item, Mapping):     # a dangling edge
        return (f"{item.get('kind')} edge {item.get('source_id')} -> {item.get('target_id')} "
                f"(edge {item.get('edge_id')})")
    return str(item)


def unresolved_line(u: Mapping[str, Any]) -> str:
    """ "unresolved link in notes/a.md: [[Foo]]"."""
    where = u.get("path") or u.get("note_id") or "?"
    return f"unresolved link in {where}: [[{u.get('text') or u.get('target')}]]"


def check_problems(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem `check` found, one line each: (the field that breaks the index or "", line); the broken
    ones first ("orphan_chunks", "b#c01"), then the unresolved links ("", "unresolved link in a.md: [[Foo]]")."""
    out = [(key, _problem(item)) for key in CHECK_KEYS for item in data.get(key) or []]
    out += [("", unresolved_line(u)) for u in data.get("unresolved") or []]
    return out


# ---------------------------------------------------------------------------- suggest


def llm_words(llm: Mapping[str, Any] | None) -> str:
    """The analysis' LLM status in words: "not used (no LLM configured)", "phi3:mini typed 2 of 3 links"."""
    if not llm:
        return "not asked"
    if not llm.get("used"):
        reason = llm.get("reason")
        return f"not used ({reason})" if reason else "not used"
    model = llm.get("model") or "the LLM"
    if llm.get("of") is not None:
        return f"{model} typed {llm.get('answered', 0)} of {plural(int(llm['of']), 'link')}"
    return f"used ({model})"


_ALSO = "also matches in "


def short_reasons(reasons: Sequence[str]) -> list[str]:
    """`plain_reasons` with the note's other matching sections folded into one reason (the first one named)."""
    also = [r[len(_ALSO):] for r in reasons if r.startswith(_ALSO)]
    out = [r.replace(" (see the details)", "") for r in reasons if not r.startswith(_ALSO)]
    if also:
        rest = f" and {plural(len(also) - 1, 'other section')}" if len(also) > 1 else ""
        out.append(f"{_ALSO}{also[0]}{rest}")
    return out


def print_hits(console: Any, data: Mapping[str, Any], explain: bool, words: Sequence[str]) -> None:
    """`query`'s hits on `console` (a rich Console): per hit its rank, name and score, its path, a two-line
    excerpt of its best passage with the question's words in bold; with `explain` the score's terms and the
    reasons in words. No line is longer than the console is wide; paths are shortened at '/' only."""
    from rich.padding import Padding

    from mindnet.retrieval.results import plain_reasons, shown_name

    hits = list(data.get("hits") or [])
    console.print(Text(f"{data.get('mode')} search: {plural(len(hits), 'hit')} (query_id {data.get('query_id')})",
                       style="bold"))
    if not hits:
        return
    rank_width = len(str(len(hits)))
    indent = rank_width + 2
    avail = max(console.width - indent, 10)
    for i, hit in enumerate(hits, 1):
        head = Table.grid(expand=True)
        head.add_column(no_wrap=True, width=indent)
        head.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        head.add_column(no_wrap=True, justify="right")
        head.add_row(Text(f"{i:>{rank_width}}."), Text(shown_name(hit), style="bold"),
                     Text(f" {_fmt(hit.get('score'))}"))
        console.print(head)
        more = passages_note(hit)
        path = Text(fit_path(str(hit.get("path") or ""), avail - (len(more) + 1 if more else 0)), style="cyan")
        if more:
            path.append(" " + more, style="dim")
        lines: list[Any] = [path]
        lines += [marked(line, words) for line in excerpt_lines(str(hit.get("text") or ""), words, avail)]
        for line in lines:
            line.no_wrap, line.overflow = True, "ellipsis"
            console.print(Padding(line, (0, 0, 0, indent), expand=False))
        if explain:
            console.print(Padding(Text(breakdown_line(hit.get("score_breakdown")), style="dim"), (0, 0, 0, indent),
                                  expand=False))
            for line in textwrap.wrap("why: " + "; ".join(short_reasons(plain_reasons(hit, limit=2))), avail,
                                      break_long_words=True, break_on_hyphens=False):
                console.print(Padding(Text(line, no_wrap=True, overflow="ellipsis"), (0, 0, 0, indent),
                                      expand=False))
        if i < len(hits):
            console.print()


def print_wrapped(console: Any, text: str, indent: int, style: str = "") -> None:
    """`text` wrapped at spaces to the console's width, every line indented by `indent`, no trailing spaces."""
    from rich.padding import Padding
    for line in textwrap.wrap(text, max(console.width - indent, 10), break_long_words=True,
                              break_on_hyphens=False):
        console.print(Padding(Text(line, style=style, no_wrap=True, overflow="ellipsis"), (0, 0, 0, indent),
                              expand=False))


def print_link_suggestions(console: Any, links: Sequence[Mapping[str, Any]]) -> None:
    """`suggest`'s links: per link its number, note, kind and confidence on one line, then why, wrapped."""
    console.print(Text(f"{plural(len(links), 'link suggestion')}" + (":" if links else ""), style="bold"))
    rank_width = len(str(len(links)))
    indent = rank_width + 2
    for i, s in enumerate(links, 1):
        head = Table.grid(expand=True)
        head.add_column(no_wrap=True, width=indent)
        head.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        head.add_column(no_wrap=True, justify="right")
        relation = s.get("relation") or {}
        head.add_row(Text(f"{i:>{rank_width}}."), Text(str(s.get("title") or s.get("note_id") or "?"), style="bold"),
                     Text(f" {relation.get('kind')} {_fmt(s.get('confidence'), 2)}"))
        console.print(head)
        via = "+".join(s.get("sources") or [])
        print_wrapped(console, f"{'via ' + via + ': ' if via else ''}{s.get('reason')}; kind: "
                               f"{relation.get('reason')}", indent)
