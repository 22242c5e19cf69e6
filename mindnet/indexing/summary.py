"""The manifest's summary: what a re-import that finds nothing changed needs, without loading the manifest.

The manifest (`mindnet.indexing.state`) holds an entry per note: about 60 MB of JSON at 30,000 notes, whose
loading took seconds of every unchanged re-import. Each manifest write leaves a small summary beside it: the
index token and config key the manifest was written for, the manifest's own size and mtime, a digest of every
indexed note's (path, size, mtime), and what an unchanged run reports (each note's warnings and link warnings,
the totals). A re-import that finds the same token in the index folder's mindnet.json, the same config key and
mindnet version, the manifest as the summary saw it, and a stat scan of the vault with the same digest, reports
from the summary alone and opens nothing else.

A summary is written only when the manifest could not find a change that the digest misses: every note's stat
was read long enough after its last write (`NoteEntry.same_file`: a later write cannot hide in its mtime tick),
no note waits to be linked again or written (`dirty`, `unwritten`), no entry is a placeholder, every chunk has
its vector, and the index holds a note (an empty index plans the whole vault, which reports a missing folder).
Otherwise the run loads the manifest as before; the next manifest write, or an unchanged run that loaded the
manifest, writes the summary again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from mindnet.indexing.report import ImportReport
from mindnet.indexing.state import MANIFEST_VERSION, RACY_NS, IndexState
from mindnet.store.folder import write_json
from mindnet.vault.scan import Issue

__all__ = ["add_totals", "drop_summary", "read_summary", "report_unchanged", "summary_path", "write_summary"]

log = logging.getLogger(__name__)
SUMMARY_VERSION = 1


def summary_path(manifest: Path) -> Path:
    return manifest.with_name(f"{manifest.stem}.summary.json")


def _mindnet_version() -> str:
    try:
        return metadata.version("mindnet")
    except metadata.PackageNotFoundError:
        return "unknown"


def files_digest(stats: Iterable[tuple[str, int, int]]) -> str:
    """One hash of every (vault path, size, mtime in ns), in any order."""
    text = "\n".join(f"{path}\0{size}\0{mtime}" for path, size, mtime in sorted(stats))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def add_totals(report: ImportReport, state: IndexState) -> None:
    """The report's chunks, edges, unresolved links and link counts from the entries (a skipped note's left out)."""
    failed = {i.path for i in report.skipped}
    kinds: dict[str, int] = {}     # added up here: Counter.update per note took a third of a 30,000-note run
    for entry in state.entries.values():
        if entry.path in failed:
            continue
        report.chunks += entry.chunks
        for kind, n in entry.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
        if mentioned := entry.kinds.get("mentions", 0):
            report.mention_edges += mentioned
            report.mention_sources[entry.path] = mentioned
        if entry.unresolved:
            report.unresolved += [(entry.path, u) for u in entry.unresolved]
        if entry.link_counts:
            report.add_links(entry.path, entry.link_counts)
    report.edges_by_kind.update(kinds)


def _current(state: IndexState) -> bool:
    """No change can hide from a digest of the entries' stats (see the module docstring)."""
    return (bool(state.entries) and state.vectors_complete and not state.dirty and not state.unwritten
            and all(e.size >= 0 and e.seen_ns - e.mtime_ns > RACY_NS for e in state.entries.values()))


def drop_summary(manifest: Path) -> None:
    """Before the manifest is written: a summary never describes another manifest than the one beside it."""
    try:
        summary_path(manifest).unlink(missing_ok=True)
    except OSError as exc:
        log.warning("could not remove %s (%s)", summary_path(manifest), exc)


def write_summary(manifest: Path, state: IndexState, token: str) -> None:
    """The summary of the manifest just written (or just loaded) for the index whose token is `token`."""
    path = summary_path(manifest)
    if not _current(state):
        drop_summary(manifest)
        return
    entries = list(state.entries.values())
    scratch = ImportReport(vault="")
    scratch.issues = [i for e in entries if e.issues or e.link_issues
                      for i in (*e.report_issues(), *e.link_report_issues())]
    add_totals(scratch, state)
    unread = {e.path for e in entries for level, _, _ in e.issues if level == "error"}
    try:
        info = manifest.stat()
        data = {
            "version": SUMMARY_VERSION, "manifest_version": MANIFEST_VERSION, "mindnet": _mindnet_version(),
            "token": token, "config_key": state.config_key, "manifest": [info.st_size, info.st_mtime_ns],
            "digest": files_digest((e.path, e.size, e.mtime_ns) for e in entries),
            "notes": len(entries) - len(unread),
            "issues": {e.path: e.issues for e in entries if e.issues},
            "link_issues": [[e.path, *i] for e in entries for i in e.link_issues],
            "totals": {"chunks": scratch.chunks, "edges_by_kind": scratch.edges_by_kind,
                       "mention_edges": scratch.mention_edges, "mention_sources": scratch.mention_sources,
                       "unresolved": scratch.unresolved, "links_by_syntax": scratch.links_by_syntax,
                       "links_by_rule": scratch.links_by_rule, "ambiguous": scratch.ambiguous,
                       "anchors_unresolved": scratch.anchors_unresolved, "urls": scratch.urls}}
        write_json(path, data)
    except OSError as exc:
        log.warning("could not write the manifest's summary %s (%s); re-imports load the manifest", path, exc)
        drop_summary(manifest)


def read_summary(manifest: Path, token: str, config_key: str) -> dict | None:
    """The summary beside `manifest`, if it was written for this index (`token`), config and mindnet, and for the
    manifest as it is now; None otherwise."""
    try:
        data = json.loads(summary_path(manifest).read_text(encoding="utf-8"))
        info = manifest.stat()
        if (not isinstance(data, dict) or data.get("version") != SUMMARY_VERSION
                or data.get("manifest_version") != MANIFEST_VERSION or data.get("token") != token
                or data.get("config_key") != config_key or data.get("mindnet") != _mindnet_version()
                or data.get("manifest") != [info.st_size, info.st_mtime_ns]):
            return None
        return data
    except (OSError, ValueError) as exc:
        log.debug("no usable summary beside %s (%s)", manifest, exc)
        return None


def report_unchanged(summary: dict, files: dict[str, tuple[str, os.stat_result]], scan_issues: list[Issue],
                     report: ImportReport) -> bool:
    """Fill `report` as an import that finds nothing changed, when the scan (`stat_notes`) finds every note as
    the summary has it; False (and `report` untouched) when any note was added, removed, moved or written since."""
    try:
        if files_digest((rel, info.st_size, info.st_mtime_ns) for rel, (_, info) in files.items()) \
                != summary["digest"]:
            return False
        by_path: dict = summary["issues"]
        # in the order an import that loads the manifest reports them: the scan's, each note's in scan order,
        # then each note's link warnings
        issues = list(scan_issues)
        issues += [Issue(level, rel, message, line) for rel in files for level, message, line in by_path.get(rel, ())]
        issues += [Issue(level, path, message, line, kind="link")
                   for path, level, message, line in summary["link_issues"]]
        t = summary["totals"]
        notes, chunks, urls, anchors = int(summary["notes"]), int(t["chunks"]), int(t["urls"]), \
            int(t["anchors_unresolved"])
        kinds, mention_edges, sources = Counter(t["edges_by_kind"]), int(t["mention_edges"]), \
            Counter(t["mention_sources"])
        unresolved = [(path, text) for path, text in t["unresolved"]]
        syntax, rules, ambiguous = Counter(t["links_by_syntax"]), Counter(t["links_by_rule"]), dict(t["ambiguous"])
    except (KeyError, TypeError, ValueError) as exc:
        log.info("summary not used (%s); the manifest is loaded", exc)
        return False
    report.issues.extend(issues)
    report.planned, report.notes, report.unchanged = "changes", notes, notes
    report.chunks += chunks
    report.edges_by_kind.update(kinds)
    report.mention_edges += mention_edges
    report.mention_sources.update(sources)
    report.unresolved += unresolved
    report.links_by_syntax.update(syntax)
    report.links_by_rule.update(rules)
    report.ambiguous.update(ambiguous)
    report.anchors_unresolved += anchors
    report.urls += urls
    return True
