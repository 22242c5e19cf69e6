"""Planning an import: which notes to (re)write and with which chunks and edges.

`plan_vault` reads, chunks and links the whole vault. `plan_changes` uses what the index holds (an
`IndexState`) to read only the files whose stat changed, and re-derives the edges of only the notes they affect:
notes whose links resolve by a key (id, path, title, alias, file name) that now names another note or none, and
notes whose text contains a title or alias that appeared, disappeared or moved to another note (mentions). Both
give the same chunks and edges for every note they plan; `plan_changes` plans fewer notes.
"""

from __future__ import annotations

import hashlib
import json
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.indexing.edges import Edge, NoteLinks, link_note
from mindnet.indexing.mentions import MentionIndex, common_limit, mention_names
from mindnet.indexing.reading import chunk_note, read_notes
from mindnet.indexing.resolver import LinkResolver, anchor_chunks
from mindnet.indexing.state import IndexState, NoteEntry
from mindnet.settings import MentionSettings, TypesConfig
from mindnet.vault.budget import within_budget
from mindnet.vault.note import Note, budget_warning, cut_note
from mindnet.vault.scan import Issue, load_note, scan_vault, stat_notes

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

    from mindnet.indexing.node_parser import MarkdownNoteParser

PIPELINE_VERSION = "7"      # bump when chunking, payloads or embedded text change shape: every note is rebuilt
                            # (3: passages cut on the model's token budget; 6: names are file names, Markdown
                            # links, anchors to chunks, headings outside code and math, YAML 1.2; 7: chunk payloads
                            # list their folders, note records their language)
LINK_RULES = ("explicit", "inline", "callout")


@dataclass
class PlannedNote:
    note: Note
    nodes: list[TextNode]
    edges: list[Edge]
    fingerprint: str
    edges_hash: str
    named: list[str] = field(default_factory=list)   # mention names its text names (MentionIndex.count_notes)
    found: list[str] = field(default_factory=list)   # every mention name in its text (its edges depend on)
    capped: bool = False
    links: NoteLinks | None = None                   # its links: report lines, resolver keys, counts
    anchors: dict[str, int] = field(default_factory=dict)   # its headings and blocks -> chunk number

    @property
    def link_issues(self) -> list[Issue]:
        return self.links.issues if self.links is not None else []


@dataclass
class VaultPlan:
    """The notes to compare with their records and write where they differ, and the notes gone."""
    planned: list[PlannedNote]
    notes: int                          # notes in the vault now
    gone: list[str] = field(default_factory=list)   # ids gone from the vault (plan_changes only)
    issues: list[Issue] = field(default_factory=list)
    neighbours: int = 0                 # unchanged notes planned again for their links or mentions
    touched: int = 0                    # files whose stat changed but not their bytes (entries refreshed)
    seconds_mentions: float = 0.0


def note_fingerprint(note: Note, types: TypesConfig, model_key: str) -> str:
    spec = types.types[note.type]
    profile = types.chunk_profiles[spec.chunk_profile]
    parts = [PIPELINE_VERSION, note.content_hash, note.path, note.type, spec.model_dump_json(),
             profile.model_dump_json(), model_key]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def edges_fingerprint(edges: list[Edge]) -> str:
    rows = sorted(json.dumps(e.payload(), sort_keys=True) for e in edges)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def config_key(types: TypesConfig, model_key: str) -> str:
    """Changes when any note's fingerprint or edges could change without its file changing."""
    return hashlib.sha256(f"{PIPELINE_VERSION}\n{types.model_dump_json()}\n{model_key}".encode()).hexdigest()


def _plan_note(note: Note, parser: MarkdownNoteParser, resolver: LinkResolver, types: TypesConfig,
               mentions: MentionIndex | None, model_key: str, issues: list[Issue],
               nodes: list[TextNode] | None = None) -> PlannedNote:
    """Chunks (unless given) and edges of one note, within the per-note budget: a note whose linking runs past
    it is chunked and linked again as far as it was read, with a report line."""
    def attempt(lines: int | None) -> tuple[Note, list[TextNode], NoteLinks]:
        cut = note if lines is None else cut_note(note, lines, types)
        chunks = nodes if lines is None and nodes is not None else parser.note_to_nodes(cut)
        return cut, chunks, link_note(cut, chunks, resolver, types, mentions)

    total = note.body.count("\n") + 1
    (note, nodes, links), kept = within_budget(types.note_budget_seconds, attempt)
    if kept is not None:
        issues.append(Issue("warning", note.path, budget_warning("linking", types, kept, total), note.body_line + kept))
    if not nodes and note.frontmatter:     # an empty file is a note without text, as Obsidian makes them
        issues.append(Issue("warning", note.path, "note has a title but no text; nothing to search"))
    edges = links.edges
    planned = PlannedNote(note, nodes, edges, note_fingerprint(note, types, model_key), edges_fingerprint(edges),
                          links=links, anchors=anchor_chunks(note, nodes))
    if mentions is not None:
        planned.named, planned.found = named_in(note, mentions), found_in(note, mentions)
        planned.capped = sum(e.kind == "mentions" for e in edges) >= mentions.settings.max_per_note
    return planned


def keep_anchor_targets(planned: list[PlannedNote], entries: dict[str, NoteEntry]) -> list[PlannedNote]:
    """A link's section (`target_chunk`) that its note no longer has (a note cut at its budget after the others
    were linked to its chunks) is dropped: the link targets the note (a link inside the note then goes)."""
    chunks = {p.note.note_id: len(p.nodes) for p in planned}
    for p in planned:
        if not any(e.target_chunk is not None and not _has_chunk(e.target_chunk, chunks, entries) for e in p.edges):
            continue
        fixed = []
        for e in p.edges:
            if e.target_chunk is not None and not _has_chunk(e.target_chunk, chunks, entries):
                if e.target_id == p.note.note_id:
                    continue
                e = replace(e, target_chunk=None)
            fixed.append(e)
        p.edges = fixed
        p.edges_hash = edges_fingerprint(fixed)
    return planned


def _has_chunk(target: str, chunks: dict[str, int], entries: dict[str, NoteEntry]) -> bool:
    note_id, _, number = target.rpartition("#c")
    count = chunks.get(note_id)
    if count is None:
        entry = entries.get(note_id)
        count = entry.chunks if entry is not None else None
    return count is None or (number.isdigit() and int(number) <= count)


def found_in(note: Note, mentions: MentionIndex) -> list[str]:
    """Every name in a note's text, its own included (a name shared with another note makes an edge)."""
    return sorted({key for _, _, key, _ in mentions.body_spans(note)})


def named_in(note: Note, mentions: MentionIndex) -> list[str]:
    """The names a note's text names, as `MentionIndex.count_notes` counts them (its own names excluded)."""
    return sorted({key for _, _, key, ids in mentions.body_spans(note) if note.note_id not in ids})


def plan_vault(vault: Path, types: TypesConfig, report, *, model_key: str = "",
               parser: MarkdownNoteParser | None = None, owners: dict[str, str] | None = None,
               on_chunked: Callable[[Note, list[TextNode], str], None] | None = None) -> list[PlannedNote]:
    """Read, chunk and link the whole vault without touching Qdrant or an embedding model. With
    `on_chunked(note, chunks, fingerprint)`, each note is chunked as soon as it is read (chunks depend on the
    note alone; its links wait for the whole vault) and handed over: the import embeds it at once."""
    if parser is None:
        from mindnet.indexing.node_parser import MarkdownNoteParser
        parser = MarkdownNoteParser.from_config(types)
    chunked: dict[int, list[TextNode]] = {}
    pooled: dict[str, list[TextNode]] = {}       # path -> the chunks a worker process made (a large vault)

    def read(paths: Iterator[Path]) -> Iterator[tuple[Note | None, list[Issue]]]:
        for note, problems, nodes in read_notes(vault, paths, types, parser):
            if note is not None and nodes is not None:
                pooled[note.path] = nodes
            yield note, problems

    def chunk(note: Note) -> None:
        assert on_chunked is not None
        nodes = pooled.get(note.path)
        chunked[id(note)] = nodes = nodes if nodes is not None else parser.note_to_nodes(note)
        on_chunked(note, nodes, note_fingerprint(note, types, model_key))

    notes, issues = scan_vault(vault, types, owners=owners, on_note=chunk if on_chunked else None, reader=read)
    report.issues.extend(issues)
    # every note is chunked before any is linked: a link to a heading targets the chunk holding it
    for i, note in enumerate(notes):
        if id(note) in chunked:
            continue
        if note.path in pooled:
            chunked[id(note)] = pooled[note.path]
            continue
        notes[i], nodes = chunk_note(note, parser, types, report.issues)
        chunked[id(notes[i])] = nodes
    resolver = LinkResolver(notes, anchors={n.note_id: anchor_chunks(n, chunked[id(n)]) for n in notes})
    mentions = MentionIndex(notes, types.mentions) if types.mentions.enabled else None
    planned = [_plan_note(note, parser, resolver, types, mentions, model_key, report.issues, chunked.get(id(note)))
               for note in notes]
    planned = keep_anchor_targets(planned, {})
    for p in planned:
        report.issues.extend(p.link_issues)
    report.seconds_mentions = mentions.seconds if mentions is not None else 0.0
    report.mention_common = mentions.common_names() if mentions is not None else []
    return planned


# ---------------------------------------------------------------------------------------------- the state

def entry_of(p: PlannedNote, issues: list[Issue], seen_ns: int) -> NoteEntry:
    """The state entry of a note whose record now holds `p`'s fingerprint and edges."""
    n = p.note
    links = p.links.lookups if p.links is not None else []
    kinds: dict[str, int] = {}
    for e in p.edges:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    unresolved = [e.target_text or e.target_id for e in p.edges if not e.resolved and e.rule_id.startswith(LINK_RULES)]
    return NoteEntry(note_id=n.note_id, path=n.path, size=n.size, mtime_ns=n.mtime_ns, seen_ns=seen_ns,
                     content_hash=n.content_hash, fingerprint=p.fingerprint, edges_hash=p.edges_hash,
                     title=n.title, aliases=list(n.aliases), links=links, chunks=len(p.nodes), kinds=kinds,
                     unresolved=unresolved,
                     issues=[[i.level, i.message, i.line] for i in issues if i.path == n.path and i.kind == "file"],
                     named=p.named, found=p.found, capped=p.capped, names=list(n.names), anchors=dict(p.anchors),
                     link_issues=[[i.level, i.message, i.line] for i in p.link_issues],
                     link_counts=link_counts(p.links))


def link_counts(links: NoteLinks | None) -> dict:
    """What a note's links add to the import report (kept in its state entry)."""
    if links is None:
        return {}
    return {"syntax": dict(links.syntax), "rules": dict(links.rules), "ambiguous": dict(links.ambiguous),
            "anchors_missing": links.anchors_missing, "urls": links.url_count}


def _names(notes, settings: MentionSettings) -> dict[str, frozenset[str]]:
    """Mention name -> the notes it names, as `MentionIndex` builds its automaton."""
    names: dict[str, set[str]] = {}
    for note in notes:
        for name in mention_names(note):
            key = name.strip().casefold()
            if len(key) >= settings.min_title_length:
                names.setdefault(key, set()).add(note.note_id)
    return {k: frozenset(v) for k, v in names.items()}


def _differing(old: dict, new: dict) -> set:
    return {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}


def _text_of(vault: Path, entry: NoteEntry, state: IndexState) -> str:
    """The note's file as case-folded text (a superset of what mentions are searched in), cached by hash."""
    cached = state.texts.get(entry.note_id)
    if cached is not None and cached[0] == entry.content_hash:
        return cached[1]
    try:
        raw = (vault / entry.path).read_bytes()
    except OSError:
        return ""
    text = unicodedata.normalize("NFC", raw.decode("utf-8", errors="replace")).casefold()
    state.texts[entry.note_id] = (entry.content_hash, text)
    return text


def plan_changes(vault: Path, types: TypesConfig, state: IndexState, *, parser: Callable[[], MarkdownNoteParser],
                 model_key: str, scanned: tuple[dict, list[Issue]] | None = None) -> VaultPlan | None:
    """Plan only what changed since `state`, or None when the whole vault must be planned (two changed files
    claim one id, or the vault looks empty). `parser()` gives the parser when a note must be chunked (an
    unchanged vault never builds one, nor imports LlamaIndex)."""
    now = time.time_ns()
    files, issues = (scanned[0], list(scanned[1])) if scanned is not None else stat_notes(vault, types.exclude)
    by_path = state.by_path()
    fresh: dict[str, tuple[Note, list[Issue]]] = {}
    touched = 0
    for rel, (path, info) in files.items():
        entry = by_path.get(rel)
        if entry is not None and entry.same_file(info):
            issues.extend(entry.report_issues())
            continue
        note, problems = load_note(vault, Path(path), types)
        if note is None:
            issues.extend(problems)       # an indexed note that cannot be read now keeps its previous version
            continue
        if entry is not None and entry.content_hash == note.content_hash and entry.note_id == note.note_id:
            entry.size, entry.mtime_ns, entry.seen_ns = note.size, note.mtime_ns, now   # touched, not changed
            touched += 1
            issues.extend(entry.report_issues())
            continue
        fresh[note.path] = (note, problems)

    failed = [i for i in issues if i.level == "error"]
    kept = {nid: e for nid, e in state.entries.items()
            if e.path not in fresh and (e.path in files or skipped_now(e.path, failed))}
    owner = {nid: e.path for nid, e in kept.items()}
    changed: dict[str, Note] = {}
    for rel in sorted(fresh):
        note, problems = fresh[rel]
        holder = owner.get(note.note_id)
        if holder is not None:   # a copy of an indexed note: the indexed file keeps the id (as scan_vault)
            issues.append(Issue("error", rel, f"duplicate id '{note.note_id}' (already used by {holder}); this "
                                f"file was skipped (fix: give one of them another 'id' in its frontmatter)", 1))
            continue
        if note.note_id in changed:
            return None
        changed[note.note_id] = note
        issues.extend(problems)
    current = [*kept.values(), *changed.values()]
    if not current:
        return None
    failed_paths = {i.path for i in failed}
    unread = sum(e.path not in files or e.path in failed_paths for e in kept.values())   # kept, not read now
    gone = sorted(nid for nid in state.entries if nid not in kept and nid not in changed)

    if not changed and not gone and not (state.dirty & kept.keys()):
        # nothing added, changed or removed, and no note waiting to be linked again: every name and every
        # mention count is the one the state holds, so no link can resolve differently (an unchanged
        # re-import of 30,000 notes spent seconds building the resolver and the mention index to learn this)
        for entry in kept.values():
            issues.extend(entry.link_report_issues())
        return VaultPlan([], notes=len(current) - unread, gone=[], issues=issues, neighbours=0, touched=touched)

    # notes whose edges may differ although their file did not change; the changed notes are chunked first, as
    # a link to one of their headings targets the chunk holding it
    chunked: dict[str, list[TextNode]] = {}
    for nid in list(changed):
        changed[nid], chunked[nid] = chunk_note(changed[nid], parser(), types, issues)
    current = [*kept.values(), *changed.values()]
    resolver = LinkResolver(current, anchors={nid: anchor_chunks(n, chunked[nid]) for nid, n in changed.items()})
    affected = state.linking(_differing(LinkResolver(state.entries.values()).mapping, resolver.mapping))
    mentions = None
    seconds_mentions = 0.0
    loaded: dict[str, Note] = {}
    if types.mentions.enabled:
        names = _differing(_names(state.entries.values(), types.mentions), _names(current, types.mentions))
        renamed = {nid for nid, e in kept.items() if names and any(n in _text_of(vault, e, state) for n in names)}
        mentions = MentionIndex(current, types.mentions)
        # how many notes name each name decides which names are common (no edge) and, where a note has more
        # mentions than it may keep, which ones it keeps: kept up to date from the notes read now
        for nid in renamed:
            note, problems = load_note(vault, vault / kept[nid].path, types)
            if note is None or note.note_id != nid:
                if note is None:
                    issues.extend(problems)
                    continue
                return None   # its id changed since the scan a moment ago: plan it all
            loaded[nid] = note
        old_freq = Counter(k for e in state.entries.values() for k in e.named)
        new_named = {nid: named_in(n, mentions) for nid, n in [*changed.items(), *loaded.items()]}
        freq = Counter(old_freq)
        for nid in {*new_named, *gone}:
            if nid in state.entries:
                freq.subtract(state.entries[nid].named)
        for named in new_named.values():
            freq.update(named)
        freq = Counter({k: n for k, n in freq.items() if n > 0})
        old_limit = _limit(types.mentions, len(state.entries))
        mentions.note_freq, mentions.notes_counted = freq, len(current)
        new_limit = mentions.common_limit()
        counted = _differing(dict(old_freq), dict(freq))
        flipped = {k for k in old_freq.keys() | freq.keys()
                   if (old_freq.get(k, 0) > old_limit) != (freq.get(k, 0) > new_limit)}
        affected |= renamed | {nid for nid, e in kept.items()
                               if flipped.intersection(e.found) or (e.capped and counted.intersection(e.found))}
    affected = (affected | state.dirty) & kept.keys()

    planned = [_plan_note(n, parser(), resolver, types, mentions, model_key, issues, chunked[nid])
               for nid, n in changed.items()]
    for nid in sorted(affected):
        entry = kept[nid]
        note = loaded.get(nid)
        if note is None:
            note, problems = load_note(vault, vault / entry.path, types)
            if note is None or note.note_id != nid:
                if note is None:
                    issues.extend(problems)
                    continue
                return None   # its id changed since the scan a moment ago: plan it all
            if note.content_hash != entry.content_hash:
                issues.extend(problems)
        planned.append(_plan_note(note, parser(), resolver, types, mentions, model_key, []))
    if mentions is not None:
        seconds_mentions = mentions.seconds
    planned = keep_anchor_targets(planned, kept)
    linked_now = {p.note.note_id for p in planned}
    for p in planned:
        issues.extend(p.link_issues)
    for nid, entry in kept.items():
        if nid not in linked_now:
            issues.extend(entry.link_report_issues())
    return VaultPlan(planned, notes=len(current) - unread, gone=gone, issues=issues, neighbours=len(affected),
                     touched=touched, seconds_mentions=seconds_mentions)


def _limit(settings: MentionSettings, notes: int) -> float:
    """`MentionIndex.common_limit` for a vault of `notes` notes."""
    return common_limit(settings, notes)


def skipped_now(path: str, failed: list[Issue]) -> bool:
    """Whether this run could not read `path`: the file itself, or a folder above it (issue path ends in /)."""
    return any(path == i.path or (i.path.endswith("/") and (path.startswith(i.path) or i.path == "./"))
               for i in failed)
