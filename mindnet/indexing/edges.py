"""Typed, weighted edges derived from chunks: explicit links, inline relations, callouts, type defaults,
structure (next/prev/belongs_to) and unlinked mentions.

A type's default edges (`edge_defaults` in types.yaml) on an explicit link are not stored as edges of their
own: the link's edge carries them as extra kinds (`kinds: ["references", "related_to"]`), so a vault with
38,000 wikilinks stores 38,000 link edges, not 76,000. The edge's own `kind` stays what the link wrote;
`default_rule` and `default_confidence` are the default kinds' rule and confidence, and readers match a kind
against `kinds` (`store.collections.edge_as` shows an edge as one of its kinds).

Every edge goes from a chunk (`source_id`) to a note id, a chunk id, or - when the link does not resolve -
the link text itself (`resolved: false`). Because all edges are derived again on each import from the current
set of notes, an unresolved edge heals as soon as a matching note appears.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace

from llama_index.core.schema import TextNode

from mindnet.indexing.mentions import MentionIndex
from mindnet.settings import TypesConfig
from mindnet.vault.budget import CHECK_EVERY, checkpoint
from mindnet.vault.links import extract_links
from mindnet.vault.note import Note

STRUCTURAL_KINDS = ("belongs_to", "next", "prev")


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

    @property
    def edge_id(self) -> str:
        return edge_key(self.source_id, self.target_id, self.kind)

    @property
    def kinds(self) -> list[str]:
        return [self.kind, *self.extra_kinds]

    def payload(self) -> dict:
        """The stored payload: the fields in declaration order (`extra_kinds` as `kinds`; the default's rule and
        confidence only with extra kinds), then `kinds` and `edge_id`. Built by hand: `dataclasses.asdict`
        deep-copies field by field and cost ~50 s of a 10,000-note import under a profiler (271k edges, each
        payload built twice: for the edges hash and for the write)."""
        data = {"source_id": self.source_id, "target_id": self.target_id, "kind": self.kind,
                "rule_id": self.rule_id, "confidence": self.confidence, "note_id": self.note_id,
                "scope": self.scope, "resolved": self.resolved, "target_text": self.target_text}
        if self.extra_kinds:
            data["default_rule"] = self.default_rule
            data["default_confidence"] = self.default_confidence
        data["kinds"] = [self.kind, *self.extra_kinds]
        data["edge_id"] = self.edge_id
        return data


class LinkResolver:
    """Resolves link text to a note id by id, path, title, alias or file name, case-insensitively."""

    def __init__(self, notes: Iterable[Note]) -> None:
        ranked: dict[str, tuple[int, str]] = {}

        def put(key: str, rank: int, note_id: str) -> None:
            key = key.strip().casefold()
            if key and (key not in ranked or ranked[key][0] > rank):
                ranked[key] = (rank, note_id)

        for note in sorted(notes, key=lambda n: n.path):
            put(note.note_id, 0, note.note_id)
            put(note.path, 1, note.note_id)
            put(note.path.removesuffix(".md"), 1, note.note_id)
            put(note.title, 2, note.note_id)
            for alias in note.aliases:
                put(alias, 3, note.note_id)
            put(note.stem, 4, note.note_id)
        self._keys = {k: v[1] for k, v in ranked.items()}

    def resolve(self, text: str) -> str | None:
        key = text.strip().casefold().removesuffix(".md")
        return self._keys.get(key) or self._keys.get(key.rsplit("/", 1)[-1])

    @property
    def mapping(self) -> dict[str, str]:
        """Every lookup key (case-folded) -> the note id it resolves to."""
        return self._keys

    def signature(self) -> str:
        """Changes whenever any link could resolve differently (used to decide if edges must be re-derived)."""
        digest = hashlib.sha256()
        for key in sorted(self._keys):
            digest.update(f"{key}\0{self._keys[key]}\n".encode())
        return digest.hexdigest()


def _dedupe(edges: list[Edge]) -> list[Edge]:
    """One edge per (source, target, kind), the most confident; a default kind that another edge on the same
    pair already carries (as its kind or an extra kind) is dropped, and extra kinds equal to a stored edge's
    own kind are removed (an explicit `[[rel:related_to X]]` beside `[[X]]` keeps its own edge)."""
    best: dict[str, Edge] = {}
    for e in edges:
        if e.edge_id not in best or e.confidence > best[e.edge_id].confidence:
            merged = tuple(dict.fromkeys(e.extra_kinds + (best[e.edge_id].extra_kinds if e.edge_id in best else ())))
            best[e.edge_id] = replace(e, extra_kinds=merged)
        else:
            old = best[e.edge_id]
            best[e.edge_id] = replace(old, extra_kinds=tuple(dict.fromkeys(old.extra_kinds + e.extra_kinds)))
    own = {(e.source_id, e.target_id, e.kind) for e in best.values()}
    out = []
    for e in best.values():
        extra = tuple(k for k in e.extra_kinds if k != e.kind and (e.source_id, e.target_id, k) not in own)
        if not extra:
            e = replace(e, extra_kinds=(), default_rule=None, default_confidence=None)
        elif extra != e.extra_kinds:
            e = replace(e, extra_kinds=extra)
        out.append(e)
    return out


def derive_edges(note: Note, nodes: list[TextNode], resolver: LinkResolver, types: TypesConfig,
                 mentions: MentionIndex | None = None) -> list[Edge]:
    """All edges defined by one note's chunks."""
    conf = types.confidence
    spec = types.types[note.type]
    edges: list[Edge] = []
    rule_confidence = {"explicit:wikilink": conf.wikilink, "explicit:embed": conf.embed,
                       "inline:rel": conf.inline_rel, "callout:edge": conf.callout}
    candidates: list[tuple[str, str, str]] = []   # (chunk id, note id, name) of unlinked mentions
    for i, node in enumerate(nodes):
        checkpoint(int(node.metadata.get("line", note.body_line)) - note.body_line, CHECK_EVERY)
        cid = node.node_id
        edges.append(Edge(cid, note.note_id, "belongs_to", "structure:belongs_to", conf.structural, note.note_id))
        if i + 1 < len(nodes):
            nxt = nodes[i + 1].node_id
            edges.append(Edge(cid, nxt, "next", "structure:order", conf.structural, note.note_id))
            edges.append(Edge(nxt, cid, "prev", "structure:order", conf.structural, note.note_id))
        linked: set[str] = {note.note_id}
        for ref in extract_links(node.get_content()):
            if ref.kind == "attachment":   # kept as a record of the file, never a note: not unresolved, no graph
                edges.append(Edge(cid, ref.target, "attachment", ref.rule_id, 1.0, note.note_id, resolved=False,
                                  target_text=ref.target))
                continue
            target = resolver.resolve(ref.target)
            target_id, resolved = (target, True) if target else (ref.target, False)
            if target == note.note_id and ref.heading is None:
                continue  # a note linking to itself adds nothing to the graph
            linked.add(target_id)
            # the type's default kinds ride on the link's edge (see the module docstring)
            defaults = tuple(k for k in spec.edge_defaults if k != ref.kind) \
                if ref.rule_id.startswith("explicit:") else ()
            edges.append(Edge(cid, target_id, ref.kind, ref.rule_id, rule_confidence[ref.rule_id], note.note_id,
                              resolved=resolved, target_text=ref.target, extra_kinds=defaults,
                              default_rule=f"edge_defaults:{note.type}" if defaults else None,
                              default_confidence=conf.default_edge if defaults else None))
        if mentions is not None:
            found = mentions.find(node.get_content(), exclude=linked)
            candidates += [(cid, target_id, surface) for target_id, surface in found]
    if mentions is not None:
        edges += mention_edges(note, candidates, mentions, types.mentions.confidence)
    return _dedupe(edges)


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
