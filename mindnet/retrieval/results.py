"""Hits as plain data: the one shape the CLI, the HTTP API, the chat UI and the logs all show."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mindnet.retrieval.hits import Hit

if TYPE_CHECKING:     # a CLI (its own search, or a server's answer) imports no LlamaIndex
    from llama_index.core.schema import NodeWithScore

    from mindnet.retrieval.retriever import RetrievalResult
    from mindnet.retrieval.search import SearchResult


# words not worth marking in a passage (the chat UI's sources, the CLI's excerpts)
_STOP = set("""der die das und oder ein eine einer eines einem einen ist sind war habe hast hat ich du er sie es wir
ihr was wer wie wo wann warum welche welcher welches mit von zu zum zur für auf aus bei nach über unter dem den
des nicht auch noch nur mein meine the and or a an is are was were what who how why when which with from for of
to in on at by this that it its my your does do did""".split())


def highlight_words(query: str) -> list[str]:
    """The query's content words (3+ letters, no stop words) to mark in a source's text."""
    words = re.findall(r"[^\W_]{3,}", query.casefold())
    return list(dict.fromkeys(w for w in words if w not in _STOP))


def written_title(hit: Mapping[str, Any]) -> str | None:
    """The written title shown beside a hit's name: its first extra name (frontmatter title or first heading)
    when that says more than the name in another case; None for "Qdrant" beside qdrant.md."""
    name = str(hit.get("title") or hit.get("note_id") or "?")
    written = [str(n) for n in hit.get("names") or [] if str(n).strip()]
    return written[0] if written and written[0].casefold() != name.casefold() else None


def shown_name(hit: Mapping[str, Any]) -> str:
    """A hit's note as it is shown: its name (the file name) with its written title beside it
    ("rag-paper-lewis-2020 (Lewis et al. 2020 ...)"), never instead of it."""
    name = str(hit.get("title") or hit.get("note_id") or "?")
    beside = written_title(hit)
    return f"{name} ({beside})" if beside else name


def hit_dict(n: Hit | NodeWithScore, *, explain: bool = True) -> dict[str, Any]:
    """A hit (mindnet's own, or a LlamaIndex node from `MindnetRetriever`) as the JSON the API returns."""
    if isinstance(n, Hit):
        meta, node_id, text = n.metadata, n.node_id, n.text
    else:
        meta, node_id, text = n.node.metadata, n.node.node_id, n.node.get_content()
    hit = {
        "node_id": meta.get("chunk_id", node_id), "note_id": meta.get("note_id"),
        "title": meta.get("title"), "names": list(meta.get("names") or []), "path": meta.get("path"),
        "type": meta.get("type"),
        "heading_path": meta.get("heading_path", []), "score": n.score, "text": meta.get("text", text),
        "score_breakdown": meta.get("score_breakdown"),
    }
    if "passages" in meta:
        hit["passages"] = meta["passages"]
    if explain:
        hit["explanation"] = meta.get("explanation")
    return hit


def result_hits(result: SearchResult | RetrievalResult) -> list[Hit] | list[NodeWithScore]:
    """The hits of `GraphSearch.search`, or the nodes of `MindnetRetriever.search`."""
    return result.hits if hasattr(result, "hits") else result.nodes


def result_dict(result: SearchResult | RetrievalResult, query_id: str, *, explain: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"query_id": query_id, "mode": result.query.mode, "top_k": result.query.top_k,
                           "group": result.query.group,
                           "hits": [hit_dict(n, explain=explain) for n in result_hits(result)], "trace": result.trace}
    if result.notes is not None:
        out["notes"] = [h.model_dump() for h in result.notes]
    return out


def _three(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _number(b: Mapping[str, Any], key: str) -> float | None:
    v = b.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


EDGE_WORDS = {"references": "wikilink", "mentions": "mentions its title", "depends_on": "depends on",
              "related_to": "related", "belongs_to": "part of", "part_of": "part of", "blocks": "blocks",
              "supports": "supports", "contradicts": "contradicts", "next": "next", "prev": "previous"}


def edge_words(kind: object) -> str:
    return EDGE_WORDS.get(str(kind), str(kind).replace("_", " "))


def plain_reasons(hit: Mapping[str, Any], limit: int = 4) -> list[str]:
    """Why this source, in plain words: how well it matched, whether the graph found it, its links."""
    b = hit.get("score_breakdown") or {}
    expl = hit.get("explanation") or {}
    out = []
    if _number(b, "dense") is None and _number(b, "lexical") is not None:   # no vector yet: words alone
        out.append(f"matches your question by keywords only (keyword match {_three(b.get('lexical'))})")
    elif _number(b, "semantic") is not None:
        out.append(f"matches your question (similarity {_three(b.get('semantic'))})")
    if expl.get("via_graph"):
        out.append("found through the links of the best matches, not by the text search")
    if (_number(b, "centrality_bonus") or 0) >= 0.5:   # PageRank in the result subgraph, max 1
        out.append("central among the found notes (many of them link to it)")
    for e in list(expl.get("incoming") or [])[:limit]:
        at = f", to its section '{e['section']}'" if e.get("section") else ""
        out.append(f"linked from '{e.get('other_title') or e.get('other_id')}'{at} ({edge_words(e.get('kind'))})")
    for e in list(expl.get("outgoing") or [])[:limit]:
        at = f"the section '{e['section']}' of " if e.get("section") else ""
        out.append(f"links to {at}'{e.get('other_title') or e.get('other_id')}' ({edge_words(e.get('kind'))})")
    more = sum(max(len(expl.get(k) or []) - limit, 0) for k in ("incoming", "outgoing"))
    if more:
        out.append(f"and {more} more link{'s' if more != 1 else ''} (see the details)")
    for p in hit.get("passages") or []:   # note-level results: the note's other matching passages
        if isinstance(p, Mapping) and p.get("heading_path"):
            out.append(f"also matches in '{' > '.join(map(str, p['heading_path']))}'")
    return out
