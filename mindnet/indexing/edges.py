"""Typed, weighted edges derived from chunks: explicit links (wikilinks, Markdown links, embeds), inline
relations, callouts, type defaults, structure (next/prev/belongs_to) and unlinked mentions.

A type's default edges (`edge_defaults` in types.yaml) on an explicit link are not stored as edges of their
own: the link's edge carries them as extra kinds (`kinds: ["references", "related_to"]`), so a vault with
38,000 wikilinks stores 38,000 link edges, not 76,000. The edge's own `kind` stays what the link wrote;
`default_rule` and `default_confidence` are the default kinds' rule and confidence, and readers match a kind
against `kinds` (`store.collections.edge_as` shows an edge as one of its kinds).

Every edge goes from a chunk (`source_id`) to a note id, a chunk id (structure), or - when the link does not
resolve - its normalised target (`resolved: false`; `target_text` keeps the link as written). A link to a
heading or block (`[[Qdrant#Setup]]`, `[[a#^id]]`) keeps its `anchor` and targets the chunk that holds it
(`target_chunk`; none when the anchor does not exist, with a report line); `target_id` stays the note, so every
reader of note-level links (the link graph, filters on the edges collection) reads it as before. A link inside the
note (`[[#Setup]]`) is an edge from its chunk to the note, `target_chunk` the chunk it names. One edge per
chunk, target note and kind: of two sections of one note linked from one chunk, the first is kept.
`resolved_by` says by which rule the link resolved (`mindnet.indexing.resolver`: path, name, self, id, alias,
title). Because all edges are derived again on each import from the current set of notes, an
unresolved edge heals as soon as a matching note appears.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mindnet.indexing.chunk_text import chunk_id
from mindnet.indexing.mentions import MentionIndex
from mindnet.indexing.resolver import LinkResolver, Resolution
from mindnet.settings import TypesConfig
from mindnet.vault.budget import CHECK_EVERY, checkpoint
from mindnet.vault.links import LinkRef, read_links
from mindnet.vault.note import Note
from mindnet.vault.scan import Issue

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

__all__ = ["STRUCTURAL_KINDS", "Edge", "LinkResolver", "NoteLinks", "derive_edges", "edge_key", "link_note",
           "mention_edges"]

STRUCTURAL_KINDS = ("belongs_to", "next", "prev")
MAX_AMBIGUOUS = 50      # ambiguous names kept per note for the report


def edge_key(source_id: str, target_id: str, kind: str) -> str:
    return hashlib.sha1(f"{source_id}|{target_id}|{kind}".encode()).hexdigest()


@dataclass(frozen=True)
class Edge:
    source_id: str
    target_id: str
    kind: str
    rule_id: str
    confidence: float
    note_id: str               # the note whose content defines this edge
    scope: str = "chunk"
    resolved: bool = True
    target_text: str | None = None   # the link as written (kept for unresolved targets and display)
    extra_kinds: tuple[str, ...] = ()   # type default kinds this link also stands for (stored once, here)
    default_rule: str | None = None          # rule and confidence of those default kinds
    default_confidence: float | None = None
    anchor: str | None = None        # the link's #anchor as written (a heading, or ^block)
    resolved_by: str | None = None   # the resolver rule of a link (path, name, self, id, alias, title)
    candidates: int = 0              # notes sharing the name it resolved by, when more than one
    target_chunk: str | None = None  # the chunk of the target note holding the anchor's heading or block

    @property
    def edge_id(self) -> str:
        return edge_key(self.source_id, self.target_id, self.kind)

    @property
    def kinds(self) -> list[str]:
        return [self.kind, *self.extra_kinds]

    def payload(self) -> dict:
        """The stored payload: the fields in declaration order (`extra_kinds` as `kinds`; the default's rule and
        confidence only with extra kinds; anchor, resolved_by, candidates, target_chunk only when set), then `kinds`
        and `edge_id`. Built by hand: `dataclasses.asdict` deep-copies field by field and cost ~50 s of a 10,000-note
        import under a profiler (271k edges, each payload built twice: for the edges hash and for the write)."""
        data = {"source_id": self.source_id, "target_id": self.target_id, "kind": self.kind,
                "rule_id": self.rule_id, "confidence": self.confidence, "note_id": self.note_id,
                "scope": self.scope, "resolved": self.resolved, "target_text": self.target_text}
        if self.extra_kinds:
            data["default_rule"] = self.default_rule
            data["default_confidence"] = self.default_confidence
        if self.anchor is not None:
            data["anchor"] = self.anchor
        if self.resolved_by is not None:
            data["resolved_by"] = self.resolved_by
        if self.candidates > 1:
            data["candidates"] = self.candidates
        if self.target_chunk is not None:
            data["target_chunk"] = self.target_chunk
        data["kinds"] = [self.kind, *self.extra_kinds]
        data["edge_id"] = self.edge_id
        return data


def _dedupe(edges: list[Edge]) -> list[Edge]:
    """One edge per (source, target, kind), the most confident; a default kind that another edge on the same
    pair already carries (as its kind or an extra kind) is dropped, and extra kinds equal to a stored edge's
    own kind are removed (an explicit `[[rel:related_to X]]` beside `[[X]]` keeps its own edge)."""
    # (`replace` only where a field changes, and each edge's key hashed once: both ran per edge, ~5% of an import)
    best: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        key = (e.source_id, e.target_id, e.kind)
        old = best.get(key)
        if old is None:
            merged = tuple(dict.fromkeys(e.extra_kinds))
            best[key] = e if merged == e.extra_kinds else replace(e, extra_kinds=merged)
        elif e.confidence > old.confidence:
            best[key] = replace(e, extra_kinds=tuple(dict.fromkeys(e.extra_kinds + old.extra_kinds)))
        elif e.extra_kinds:
            best[key] = replace(old, extra_kinds=tuple(dict.fromkeys(old.extra_kinds + e.extra_kinds)))
    own = best.keys()
    out = []
    for e in best.values():
        extra = tuple(k for k in e.extra_kinds if k != e.kind and (e.source_id, e.target_id, k) not in own)
        if not extra:
            if e.extra_kinds or e.default_rule is not None or e.default_confidence is not None:
                e = replace(e, extra_kinds=(), default_rule=None, default_confidence=None)
        elif extra != e.extra_kinds:
            e = replace(e, extra_kinds=extra)
        out.append(e)
    return out


@dataclass
class NoteLinks:
    """What linking one note gave: its edges, the report lines of links that did not resolve as written, the
    resolver keys its links consulted (its edges depend on them), and counts for the import report."""

    edges: list[Edge]
    issues: list[Issue] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    syntax: Counter = field(default_factory=Counter)       # wikilink | markdown | embed -> links
    rules: Counter = field(default_factory=Counter)        # resolver rule (or unresolved, outside) -> links
    ambiguous: dict[str, int] = field(default_factory=dict)   # a name several notes share -> those notes
    anchors_missing: int = 0
    urls: list[str] = field(default_factory=list)
    url_count: int = 0


def derive_edges(note: Note, nodes: list[TextNode], resolver: LinkResolver, types: TypesConfig,
                 mentions: MentionIndex | None = None) -> list[Edge]:
    """All edges defined by one note's chunks."""
    return link_note(note, nodes, resolver, types, mentions).edges


def _chunk_target(note_id: str, number: int) -> str:
    return chunk_id(note_id, number)   # the chunk ids the parser gives


def link_note(note: Note, nodes: list[TextNode], resolver: LinkResolver, types: TypesConfig,
              mentions: MentionIndex | None = None) -> NoteLinks:
    """The edges of one note (see `NoteLinks`): each link of its body belongs to the chunk holding its line."""
    conf = types.confidence
    spec = types.types[note.type]
    out = NoteLinks(edges=[])
    edges = out.edges
    rule_confidence = {"explicit:wikilink": conf.wikilink, "explicit:markdown": conf.markdown,
                       "explicit:embed": conf.embed, "inline:rel": conf.inline_rel, "callout:edge": conf.callout}
    scan = read_links(note.body, body=True) if nodes else None
    starts = [int(n.metadata.get("line", note.body_line)) - note.body_line for n in nodes]
    by_chunk: list[list[LinkRef]] = [[] for _ in nodes]
    lookups: set[str] = set()
    if scan is not None:
        for ref in scan.refs:
            by_chunk[max(0, bisect.bisect_right(starts, ref.line) - 1)].append(ref)
        out.issues += [_issue(note, line, message) for line, message in scan.problems]
        if scan.problems_dropped:
            out.issues.append(_issue(note, scan.problems[-1][0], f"{scan.problems_dropped} more link problems "
                                     "in this note are not listed"))
        out.urls, out.url_count = scan.urls, scan.url_count
    candidates: list[tuple[str, str, str]] = []   # (chunk id, note id, name) of unlinked mentions
    for i, node in enumerate(nodes):
        checkpoint(starts[i], CHECK_EVERY)
        cid = node.node_id
        edges.append(Edge(cid, note.note_id, "belongs_to", "structure:belongs_to", conf.structural, note.note_id))
        if i + 1 < len(nodes):
            nxt = nodes[i + 1].node_id
            edges.append(Edge(cid, nxt, "next", "structure:order", conf.structural, note.note_id))
            edges.append(Edge(nxt, cid, "prev", "structure:order", conf.structural, note.note_id))
        linked: set[str] = {note.note_id}
        for ref in by_chunk[i]:
            if ref.kind == "attachment":   # kept as a record of the file, never a note: not unresolved, no graph
                edges.append(Edge(cid, ref.target, "attachment", ref.rule_id, 1.0, note.note_id, resolved=False,
                                  target_text=ref.target))
                continue
            edge = _link_edge(note, cid, ref, resolver, out, lookups)
            if edge is None:
                continue
            linked.add(edge.target_id)
            # the type's default kinds ride on the link's edge (see the module docstring); not on a link inside
            # the note
            defaults = tuple(k for k in spec.edge_defaults if k != ref.kind) \
                if ref.rule_id.startswith("explicit:") and edge.target_id != note.note_id else ()
            edges.append(replace(edge, confidence=rule_confidence[ref.rule_id], extra_kinds=defaults,
                                 default_rule=f"edge_defaults:{note.type}" if defaults else None,
                                 default_confidence=conf.default_edge if defaults else None))
        if mentions is not None:
            found = mentions.find(node.get_content(), exclude=linked, own=note.note_id)
            candidates += [(cid, target_id, surface) for target_id, surface in found]
    if mentions is not None:
        edges += mention_edges(note, candidates, mentions, types.mentions.confidence)
    out.edges = _dedupe(edges)
    out.lookups = sorted(lookups)
    out.issues.sort(key=lambda i: i.line or 0)
    return out


def _issue(note: Note, line: int, message: str) -> Issue:
    return Issue("warning", note.path, message, note.body_line + line, kind="link")


def _link_edge(note: Note, cid: str, ref: LinkRef, resolver: LinkResolver, out: NoteLinks,
               lookups: set[str]) -> Edge | None:
    """The edge of one link (confidence and default kinds are the caller's), or None: a link to the note itself,
    to its own chunk, or out of the vault."""
    res: Resolution = resolver.resolve_link(ref.target, note.path, note.note_id)
    lookups.update(res.lookups)
    out.syntax[ref.syntax] += 1
    out.rules[res.rule] += 1
    if res.problem is not None:
        out.issues.append(_issue(note, ref.line, res.problem))
    if res.rule == "outside":
        return None
    if res.candidates > 1 and len(out.ambiguous) < MAX_AMBIGUOUS:
        out.ambiguous[res.target] = res.candidates
    if res.note_id is None:
        return Edge(cid, res.target, ref.kind, ref.rule_id, 1.0, note.note_id, resolved=False,
                    target_text=ref.target, anchor=ref.anchor, resolved_by="unresolved")
    section: str | None = None
    if ref.anchor is not None:
        number, keys, problem = resolver.resolve_anchor(res.note_id, ref.anchor)
        lookups.update(keys)
        if number is not None:
            section = chunk_id(res.note_id, number)   # the chunk ids the parser gives
        else:
            out.anchors_missing += 1
            written = f"{ref.target}#{ref.anchor}" if ref.target else f"#{ref.anchor}"
            out.issues.append(_issue(note, ref.line, f"{problem}: '{written[:80]}' links to the whole note "
                                                     f"instead (fix: correct the anchor or add the heading)"))
    if (res.note_id == note.note_id and section is None) or section == cid:
        return None      # a note linking to itself (or a chunk to itself) adds nothing to the graph
    return Edge(cid, res.note_id, ref.kind, ref.rule_id, 1.0, note.note_id, target_text=ref.target,
                anchor=ref.anchor, resolved_by=res.rule, candidates=res.candidates if res.candidates > 1 else 0,
                target_chunk=section)


def mention_edges(note: Note, candidates: list[tuple[str, str, str]], mentions: MentionIndex,
                  confidence: float) -> list[Edge]:
    """Mention edges for (chunk id, target note id, name) candidates: each at the configured confidence times
    its name's weight (short or common names are damped; weight 0: no edge), at most `max_per_note` for the
    note, the most specific names first (`MentionIndex.rank`)."""
    weighted = [(c, t, s, mentions.weight(s)) for c, t, s in candidates]
    weighted = [w for w in weighted if w[3] > 0]
    weighted.sort(key=lambda w: mentions.rank(w[2]))
    cap = mentions.settings.max_per_note
    return [Edge(cid, target_id, "mentions", "mention:title", round(confidence * weight, 4), note.note_id,
                 target_text=surface) for cid, target_id, surface, weight in weighted[:cap]]
