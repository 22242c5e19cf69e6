"""Typed, weighted edges derived from chunks: explicit links, inline relations, callouts, type defaults,
structure (next/prev/belongs_to) and unlinked mentions.

Every edge goes from a chunk (`source_id`) to a note id, a chunk id, or - when the link does not resolve -
the link text itself (`resolved: false`). Because all edges are derived again on each import from the current
set of notes, an unresolved edge heals as soon as a matching note appears.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from llama_index.core.schema import TextNode

from mindnet.indexing.mentions import MentionIndex
from mindnet.settings import TypesConfig
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

    @property
    def edge_id(self) -> str:
        return edge_key(self.source_id, self.target_id, self.kind)

    def payload(self) -> dict:
        data = asdict(self)
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
    best: dict[str, Edge] = {}
    for e in edges:
        if e.edge_id not in best or e.confidence > best[e.edge_id].confidence:
            best[e.edge_id] = e
    return list(best.values())


def derive_edges(note: Note, nodes: list[TextNode], resolver: LinkResolver, types: TypesConfig,
                 mentions: MentionIndex | None = None) -> list[Edge]:
    """All edges defined by one note's chunks."""
    conf = types.confidence
    spec = types.types[note.type]
    edges: list[Edge] = []
    rule_confidence = {"explicit:wikilink": conf.wikilink, "explicit:embed": conf.embed,
                       "inline:rel": conf.inline_rel, "callout:edge": conf.callout}
    for i, node in enumerate(nodes):
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
            edges.append(Edge(cid, target_id, ref.kind, ref.rule_id, rule_confidence[ref.rule_id], note.note_id,
                              resolved=resolved, target_text=ref.target))
            if ref.rule_id.startswith("explicit:"):
                for kind in spec.edge_defaults:
                    if kind != ref.kind:
                        edges.append(Edge(cid, target_id, kind, f"edge_defaults:{note.type}", conf.default_edge,
                                          note.note_id, resolved=resolved, target_text=ref.target))
        if mentions is not None:
            for target_id, surface in mentions.find(node.get_content(), exclude=linked):
                edges.append(Edge(cid, target_id, "mentions", "mention:title", types.mentions.confidence,
                                  note.note_id, target_text=surface))
    return _dedupe(edges)
