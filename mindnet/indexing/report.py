"""The closing report of an import: what changed, what was skipped and why, and where the time went."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mindnet.indexing.resolver import path_key
from mindnet.vault.scan import Issue


@dataclass
class ImportReport:
    vault: str
    notes: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    moved: int = 0               # renamed or moved files whose note id stayed (frontmatter `id:`)
    edges_rewritten: int = 0     # unchanged notes whose edges changed (a link healed, a mention appeared)
    chunks: int = 0
    edges_by_kind: Counter = field(default_factory=Counter)
    unresolved: list[tuple[str, str]] = field(default_factory=list)   # (note path, link text)
    issues: list[Issue] = field(default_factory=list)
    embedded_texts: int = 0
    embedding_calls: int = 0
    seconds_total: float = 0.0
    seconds_embedding: float = 0.0
    seconds_mentions: float = 0.0
    seconds_phase1: float = 0.0    # notes, chunks and edges written (searchable from here on)
    vectors_missing: int = 0       # chunks still without a dense vector (backend failed, or stopped early)
    stopped_early: bool = False    # phase 2 stopped for newer changes; the next run continues it
    mention_edges: int = 0
    planned: str = "vault"         # "vault": every note read and linked; "changes": only changed files and
    neighbours: int = 0            # the notes whose links or mentions they affect (this many)
    mention_sources: Counter = field(default_factory=Counter)   # note path -> mention edges it defines
    mention_common: list[tuple[str, int]] = field(default_factory=list)   # (name, notes naming it): no edge
    notices: list[str] = field(default_factory=list)   # one-off facts about the run (an older index rebuilt)
    links_by_syntax: Counter = field(default_factory=Counter)   # wikilink | markdown | embed -> links
    links_by_rule: Counter = field(default_factory=Counter)     # path | name | self | id | alias | title |
                                                                # unresolved | outside -> links
    ambiguous: dict[str, list[int]] = field(default_factory=dict)   # name -> [notes sharing it, notes linking it]
    anchors_unresolved: int = 0    # links to a heading or block their note does not have (each a report line)
    urls: int = 0                  # links to external URLs (not notes)

    def add_links(self, path: str, counts: dict) -> None:
        """Add one note's link counts (`planning.link_counts`)."""
        self.links_by_syntax.update(counts.get("syntax") or {})
        self.links_by_rule.update(counts.get("rules") or {})
        for name, shared in (counts.get("ambiguous") or {}).items():
            held = self.ambiguous.setdefault(name, [shared, 0])
            held[0], held[1] = max(held[0], shared), held[1] + 1
        self.anchors_unresolved += int(counts.get("anchors_missing") or 0)
        self.urls += int(counts.get("urls") or 0)

    def absorb(self, phase2: ImportReport) -> None:
        """Add a separate phase-2 run (`Importer.fill`) to this phase-1 report."""
        self.embedded_texts += phase2.embedded_texts
        self.embedding_calls += phase2.embedding_calls
        self.seconds_embedding += phase2.seconds_embedding
        self.seconds_total += phase2.seconds_total
        self.vectors_missing = phase2.vectors_missing
        self.stopped_early = phase2.stopped_early
        self.issues.extend(phase2.issues)

    @property
    def skipped(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "warning"]

    @property
    def edges(self) -> int:
        return sum(self.edges_by_kind.values())

    @property
    def attachments(self) -> int:
        """Links and embeds of files that are not notes (images, PDFs, ...): counted, never unresolved."""
        return self.edges_by_kind.get("attachment", 0)

    def top_mention_sources(self, limit: int = 10) -> list[tuple[str, int]]:
        """The notes defining the most mention edges (where mentions concentrate), most first."""
        return sorted(self.mention_sources.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def unresolved_targets(self, limit: int | None = 10) -> list[tuple[str, int]]:
        """The most frequent unresolved link targets with their counts (all of them when `limit` is None), counted
        as the resolver counts them: `[[X]]`, `[[x]]` and `[[X.md]]` are one missing note, shown as first written."""
        counts: Counter = Counter()
        shown: dict[str, str] = {}
        for _, target in self.unresolved:
            key = path_key(target)
            shown.setdefault(key, target)
            counts[key] += 1
        return sorted(((shown[k], n) for k, n in counts.items()), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def ambiguous_names(self, limit: int | None = 10) -> list[tuple[str, int, int]]:
        """(name, notes sharing it, notes linking it) of the names links resolved among several notes, the most
        linked first."""
        rows = [(name, shared, linking) for name, (shared, linking) in self.ambiguous.items()]
        return sorted(rows, key=lambda r: (-r[2], -r[1], r[0]))[:limit]

    def as_dict(self) -> dict:
        return {
            "vault": self.vault, "notes": self.notes, "new": self.new, "changed": self.changed,
            "unchanged": self.unchanged, "deleted": self.deleted, "moved": self.moved,
            "edges_rewritten": self.edges_rewritten,
            "skipped": [str(i) for i in self.skipped], "warnings": [str(i) for i in self.warnings],
            "chunks": self.chunks, "edges": self.edges, "edges_by_kind": dict(sorted(self.edges_by_kind.items())),
            "unresolved_links": [{"note": p, "link": t} for p, t in self.unresolved],
            "unresolved_count": len(self.unresolved),
            "unresolved_top": [{"target": t, "count": n} for t, n in self.unresolved_targets(10)],
            "attachments": self.attachments,
            "embedded_texts": self.embedded_texts, "embedding_calls": self.embedding_calls,
            "seconds_total": round(self.seconds_total, 3), "seconds_embedding": round(self.seconds_embedding, 3),
            "seconds_mentions": round(self.seconds_mentions, 3), "mention_edges": self.mention_edges,
            "mention_sources_top": [{"note": p, "mentions": n} for p, n in self.top_mention_sources()],
            "mention_common": [{"name": k, "notes": n} for k, n in self.mention_common],
            "seconds_phase1": round(self.seconds_phase1, 3), "vectors_missing": self.vectors_missing,
            "stopped_early": self.stopped_early, "planned": self.planned, "neighbours": self.neighbours,
            "notices": list(self.notices),
            "links_by_syntax": dict(sorted(self.links_by_syntax.items())),
            "links_by_rule": dict(sorted(self.links_by_rule.items())),
            "ambiguous_names": [{"name": n, "notes": shared, "linking_notes": linking}
                                for n, shared, linking in self.ambiguous_names(None)],
            "anchors_unresolved": self.anchors_unresolved, "urls": self.urls,
        }
