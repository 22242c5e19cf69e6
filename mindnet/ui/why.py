""""Why this source" in plain words, from the retriever's explanation records (no Chainlit; pure functions).

A source panel shows, for one hit: two or three sentences ranked by what weighed most (what matched, with the
real figures; which links lifted it and by how much; what held it back), the score formula with its numbers,
one line per note whose links lifted it (repeats counted, links that added nothing left out), and a small graph
of those links (laid out here; `SourcePanel.jsx` draws it as inline SVG).

Input is a hit as `mindnet.retrieval.results.hit_dict` makes it: `score_breakdown` is a
`mindnet.retrieval.scoring.ScoreBreakdown`, `explanation` an `Explanation` (both as plain dicts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mindnet.retrieval.results import edge_words
from mindnet.wording import plural

MAX_GRAPH_NOTES = 6          # linking notes drawn; the rest are counted under the graph
GRAPH_WIDTH = 440           # the SVG's viewBox; it is scaled to the panel's width
ROW = 40                     # per linking note
PAD = 8
NODE_W, NODE_H = 140, 26
LABEL_CHARS = 20             # a note's label in the graph (its full name is in the node's <title>)


def _num(b: Mapping[str, Any], key: str, default: float | None = None) -> float | None:
    v = b.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _x(value: float) -> str:
    """A factor as "x0.50"."""
    return f"x{value:.2f}"


def _quoted(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def keyword_only(b: Mapping[str, Any]) -> bool:
    """Found by its words alone: a hybrid hit without a dense score (its text has no vector yet)."""
    return _num(b, "dense") is None and _num(b, "lexical") is not None


def match_sentence(b: Mapping[str, Any], expl: Mapping[str, Any]) -> str:
    """What matched, with the figures the semantic term was made of."""
    sem, dense, lexical = _num(b, "semantic", 0.0), _num(b, "dense"), _num(b, "lexical")
    term = f"+{_f(_num(b, 'semantic_term', 0.0))}"
    if keyword_only(b):
        return (f"Keyword match {_f(lexical)}: its words match your question; its meaning was not compared "
                f"(the import has not embedded this passage yet) -> {term}.")
    if not sem and expl.get("via_graph"):
        return "Not matched by its text: found through the links of the best hits."
    if dense is not None and lexical is not None:
        words = (f"keyword match {_f(lexical)}" if lexical > 0 else "no keyword in common")
        other = (" It is in another language than your question, so its keywords counted as much as its meaning."
                 if b.get("other_language") else "")
        return (f"Matches your question by meaning (similarity {_f(dense)}) and by keywords ({words}): "
                f"match {_f(sem)} -> {term}.{other}")
    if dense is not None:
        return (f"Matches your question by meaning (similarity {_f(dense)}, {_f(sem)} on the scale from the "
                f"weakest to the best candidate) -> {term}.")
    return f"Matches your question (match {_f(sem)}) -> {term}."


def link_sentence(b: Mapping[str, Any], expl: Mapping[str, Any]) -> str | None:
    """Which links lifted the hit and by how much; None when the links added nothing."""
    edge, cent = _num(b, "edge_term", 0.0) or 0.0, _num(b, "centrality_term", 0.0) or 0.0
    if edge <= 0 and cent <= 0:
        return None
    g = expl.get("graph") or {}
    parts = []
    if edge > 0:
        linkers = [str(t) for t in g.get("linked_from_titles") or g.get("linked_from") or []]
        seeds = g.get("seeds")
        n = len(linkers)
        who = (f"{n} of the {seeds} best hits" if isinstance(seeds, int) and seeds >= n > 0 else
               f"{n} of the best hits" if n else "other hits")
        verb = "links" if n == 1 else "link"
        named = f" ({_quoted(linkers)})" if linkers else ""
        parts.append(f"+{_f(edge)} because {who} {verb} to it{named}")
    if cent > 0:
        parts.append(f"+{_f(cent)} because the links among the best hits lead here")
    return "Lifted by links: " + " and ".join(parts) + "."


def damping_sentence(b: Mapping[str, Any], expl: Mapping[str, Any], note_type: str) -> str | None:
    """What held the hit back: its type's weight, the question's type, hub damping, the lift cap."""
    g = expl.get("graph") or {}
    edge, cent = _num(b, "edge_term", 0.0) or 0.0, _num(b, "centrality_term", 0.0) or 0.0
    held = []
    weight = _num(b, "retriever_weight", 1.0) or 0.0
    if weight < 1:
        held.append(f"notes of type '{note_type}' count {_x(weight)}")
    intent = _num(b, "type_intent", 1.0) or 0.0
    if intent < 1:
        held.append(f"your question asks for another type of note than '{note_type}' ({_x(intent)})")
    hub = _num(g, "hub_factor", 1.0) or 0.0
    if hub < 1 and edge > 0:
        held.append(f"{g.get('in_links')} notes link to it, so each link counts less ({_x(hub)})")
    damping = _num(g, "centrality_damping", 1.0) or 0.0
    if damping < 1 and cent > 0:
        held.append(f"it is central in the whole vault, so the links leading here count less ({_x(damping)})")
    scale = _num(b, "graph_scale", 1.0) or 0.0
    if scale < 1 and g.get("capped_below"):
        held.append(f"the link bonus was cut to {100 * scale:.0f}% to keep it below '{g['capped_below']}', "
                    f"a better hit")
    if not held:
        return None
    return "Held back: " + "; ".join(held) + "."


def ranked_sentences(hit: Mapping[str, Any]) -> list[str]:
    """Two or three sentences, the one that weighed most first: the match and the links by the score they
    added, then what held the hit back."""
    b = hit.get("score_breakdown") or {}
    expl = hit.get("explanation") or {}
    if not b:
        return []
    weighed = [(_num(b, "semantic_term", 0.0) or 0.0, match_sentence(b, expl))]
    links = link_sentence(b, expl)
    if links:
        weighed.append(((_num(b, "edge_term", 0.0) or 0.0) + (_num(b, "centrality_term", 0.0) or 0.0), links))
    weighed.sort(key=lambda x: -x[0])           # stable: the match first on a tie
    out = [s for _, s in weighed]
    held = damping_sentence(b, expl, str(hit.get("type") or "?"))
    return out + ([held] if held else [])


def formula_line(b: Mapping[str, Any] | None) -> str:
    """The score as its formula with the numbers: total = W_sem*S_sem*W_type + W_edge*B_edge + W_cent*B_cent."""
    if not b:
        return ""
    w_type = max(_num(b, "retriever_weight", 1.0) or 0.0, 0.0)
    intent = _num(b, "type_intent", 1.0) or 0.0
    w_type_text = _f(w_type) if intent == 1 else f"({_f(w_type)} x {_f(intent)})"
    return (f"total = W_sem x S_sem x W_type + W_edge x B_edge + W_cent x B_cent = "
            f"{_f(_num(b, 'semantic_weight'))} x {_f(_num(b, 'semantic'))} x {w_type_text} + "
            f"{_f(_num(b, 'edge_weight'))} x {_f(_num(b, 'edge_bonus'))} + "
            f"{_f(_num(b, 'centrality_weight'))} x {_f(_num(b, 'centrality_bonus'))} = "
            f"{_f(_num(b, 'semantic_term'))} + {_f(_num(b, 'edge_term'))} + {_f(_num(b, 'centrality_term'))} = "
            f"{_f(_num(b, 'total'))}")


def _grouped(edges: list[Mapping[str, Any]], keep: Callable[[str], bool], me: str) -> list[dict[str, Any]]:
    """Incoming edges grouped by the note they come from (in the explanation's order, strongest first)."""
    grouped: dict[str, dict[str, Any]] = {}
    for e in edges:
        other = str(e.get("other_id") or e.get("other_title") or "")
        if not other or other == me or not keep(other):
            continue
        g = grouped.setdefault(other, {"id": other, "name": str(e.get("other_title") or other), "count": 0,
                                       "kinds": [], "sections": []})
        g["count"] += 1
        kind = edge_words(e.get("kind"))
        if kind not in g["kinds"]:
            g["kinds"].append(kind)
        if e.get("section") and e["section"] not in g["sections"]:
            g["sections"].append(str(e["section"]))
    return list(grouped.values())


def lifting_links(hit: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The notes whose links into the hit added to its score, each once ({id, name, count, kinds, sections}):
    (the best hits linking here, best first; the other found notes whose links carry the walk).

    A link from one of the best hits adds the link bonus (B_edge) and carries the walk from them (B_cent); a
    link from another found note only carries the walk, so it counts only with a centrality bonus. Links out of
    the hit add nothing, nor does any link when both bonuses are 0."""
    b = hit.get("score_breakdown") or {}
    expl = hit.get("explanation") or {}
    edge, cent = _num(b, "edge_term", 0.0) or 0.0, _num(b, "centrality_term", 0.0) or 0.0
    if edge <= 0 and cent <= 0:
        return [], []
    seeds = [str(s) for s in (expl.get("graph") or {}).get("linked_from") or []]
    me = str(hit.get("note_id") or "")
    incoming = list(expl.get("incoming") or [])
    rank = {s: i for i, s in enumerate(seeds)}
    best = sorted(_grouped(incoming, rank.__contains__, me), key=lambda g: rank[g["id"]])
    walk = _grouped(incoming, lambda other: other not in rank, me) if cent > 0 else []
    return best, walk


def link_line(link: Mapping[str, Any]) -> str:
    """ "3 links from 'trainingsplan-q3' (wikilink, blocks, part of)": one line per linking note."""
    count = int(link["count"])
    head = f"{count} links from" if count > 1 else "link from"
    sections = list(link.get("sections") or [])
    at = ""
    if sections:
        which = "one of them " if count > 1 and len(sections) == 1 else "some " if count > 1 else ""
        at = f", {which}to the section{'s' if len(sections) > 1 else ''} {_quoted(sections)} here"
    return f"{head} '{link['name']}' ({', '.join(link['kinds'])}){at}"


def walk_line(walk: list[Mapping[str, Any]]) -> str:
    """One line for the found notes that are no best hit but whose links carry part of the walk."""
    names = [str(w["name"]) for w in walk]
    return (f"and links from {plural(len(walk), 'other found note')} ({_quoted(names)}), which carry a part "
            f"of the walk from the best hits")


def _label(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def link_graph(hit: Mapping[str, Any], links: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The lifting links laid out for an SVG (coordinates in its viewBox): the linking notes in a column on the
    left, the hit on the right, one arrow per linking note labelled with its kinds (and count). None without
    lifting links."""
    if not links:
        return None
    name = str(hit.get("title") or hit.get("note_id") or "?")
    drawn = links[:MAX_GRAPH_NOTES]
    height = ROW * len(drawn) + 2 * PAD
    hit_node = {"id": str(hit.get("note_id") or name), "label": _label(name), "name": name,
                "x": GRAPH_WIDTH - PAD - NODE_W / 2, "y": height / 2, "hit": True}
    nodes, edges = [hit_node], []
    for i, link in enumerate(drawn):
        y = PAD + ROW * i + ROW / 2
        nodes.append({"id": link["id"], "label": _label(link["name"]), "name": link["name"],
                      "x": PAD + NODE_W / 2, "y": y, "hit": False})
        count = f" x{link['count']}" if link["count"] > 1 else ""
        edges.append({"from": link["id"], "to": hit_node["id"], "x1": PAD + NODE_W, "y1": y,
                      "x2": GRAPH_WIDTH - PAD - NODE_W - 4, "y2": hit_node["y"], "count": link["count"],
                      "kinds": list(link["kinds"]), "label": ", ".join(link["kinds"]) + count})
    more = len(links) - len(drawn)
    lines = [link_line(link) for link in links]
    return {"width": GRAPH_WIDTH, "height": height, "node_w": NODE_W, "node_h": NODE_H, "nodes": nodes,
            "edges": edges, "title": f"Links that lifted '{name}'",
            "desc": f"{plural(len(links), 'note')} {'links' if len(links) == 1 else 'link'} to '{name}': "
                    + "; ".join(lines) + ".",
            "more": f"and {plural(more, 'more note')} (listed below)" if more > 0 else ""}


def why_props(hit: Mapping[str, Any]) -> dict[str, Any]:
    """The panel's "Why this source": sentences, formula, link lines and graph (plain data)."""
    best, walk = lifting_links(hit)
    drawn = best or walk
    lines = [link_line(link) for link in drawn] + ([walk_line(walk)] if best and walk else [])
    return {"why": ranked_sentences(hit), "formula": formula_line(hit.get("score_breakdown")),
            "links": lines, "graph": link_graph(hit, drawn)}
