"""`mindnet ingest`, `dry-run`, `check` and `watch`: import the vault, show what an import would write, check
the index, follow the vault."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mindnet.commands.common import _confirm, _settings, console, err_console, plural
from mindnet.commands.serve import _stop_on_sigterm

# ---------------------------------------------------------------------------- ingest


def render_import_report(report, as_json: bool, *, all_unresolved: bool = False) -> None:
    data = report.as_dict()
    if as_json:
        console.print_json(json.dumps(data))
        return
    t = Table(title=f"Import of {escape(data['vault'])}", show_header=False)
    for key in ("notes", "new", "changed", "moved", "unchanged", "deleted", "edges_rewritten", "chunks", "edges"):
        t.add_row(key, str(data[key]))
    t.add_row("edges by kind", ", ".join(f"{k} {v}" for k, v in data["edges_by_kind"].items()))
    t.add_row("unresolved links", f"{data['unresolved_count']} to "
                                  f"{plural(len(report.unresolved_targets(None)), 'target')}")
    t.add_row("attachments", f"{plural(data['attachments'], 'link')} to files (images, PDFs, ...)")
    if data["links_by_syntax"]:
        t.add_row("links", ", ".join(f"{k} {v}" for k, v in data["links_by_syntax"].items())
                  + f"; external URLs {data['urls']}")
        t.add_row("resolved by", ", ".join(f"{k} {v}" for k, v in data["links_by_rule"].items())
                  + " (id, alias, title: where Obsidian would leave the link unresolved)")
    if data["ambiguous_names"]:
        t.add_row("ambiguous names", ", ".join(
            f"'{escape(a['name'])}' ({plural(a['notes'], 'note')}, linked from {a['linking_notes']})"
            for a in data["ambiguous_names"][:5]) + " (a link goes to the one in its folder, else nearest the root)")
    if data["anchors_unresolved"]:
        t.add_row("unresolved anchors", f"{plural(data['anchors_unresolved'], 'link')} to a heading or block their "
                                        f"note does not have (each listed below; linked to the whole note)")
    if data["mention_sources_top"]:
        top = ", ".join(f"{m['note']} {m['mentions']}" for m in data["mention_sources_top"][:5])
        t.add_row("mentions", f"{plural(data['mention_edges'], 'edge')}; most from {escape(top)}")
    if data["mention_common"]:
        t.add_row("common names", ", ".join(f"'{escape(m['name'])}' in {plural(m['notes'], 'note')}"
                                            for m in data["mention_common"][:5])
                  + " (common: damped or no mention edges, types.yaml `mentions`)")
    t.add_row("embedding", f"{plural(data['embedded_texts'], 'text')} in {plural(data['embedding_calls'], 'call')}, "
                           f"{data['seconds_embedding']:.2f} s; searchable after {data['seconds_phase1']:.2f} s")
    if data["vectors_missing"]:
        t.add_row("not embedded yet", f"{plural(data['vectors_missing'], 'chunk')} (run the import again to add them)")
    other = data["seconds_total"] - data["seconds_embedding"]
    share = 100 * other / data["seconds_total"] if data["seconds_total"] else 0
    t.add_row("time", f"{data['seconds_total']:.2f} s total, {other:.2f} s ({share:.0f}%) besides embedding")
    console.print(t)
    for line in data["notices"]:
        console.print(f"note: {escape(line)}", highlight=False)
    for line in data["skipped"] + data["warnings"]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)   # one line per problem, unwrapped
    if all_unresolved:
        for u in data["unresolved_links"]:
            console.print(f"[dim]unresolved link[/dim] {escape(u['note'])}: {escape('[[' + u['link'] + ']]')}",
                          highlight=False)
    elif data["unresolved_top"]:
        console.print("most frequent unresolved targets (--verbose lists every link):")
        for u in data["unresolved_top"]:
            console.print(f"  {u['count']:>5} x {escape('[[' + u['target'] + ']]')}", highlight=False)


def cmd_ingest(args: argparse.Namespace) -> int:
    from mindnet.service import Mindnet
    settings = _settings(args)
    app = Mindnet(settings)
    vault = Path(args.vault or settings.vault_root)
    try:
        report = _ingest_with_progress(app, vault, args)
    finally:
        app.close()   # releases the index folder for the next process (or the next command)
    render_import_report(report, args.json, all_unresolved=args.verbose or args.list_all)
    if args.strict and report.issues:
        err_console.print(f"--strict: {plural(len(report.issues), 'problem')} reported; exiting with 1")
        return 1
    return 0


PROGRESS_EVERY_S = 5.0     # without a terminal: one progress line this often


def progress_line(p: dict) -> str:
    """One plain line of an import's progress (logs and pipes, where no bar is drawn)."""
    parts = [f"{p['phase'] or 'starting'}:", f"{p['notes_written']} of {plural(p['notes_to_write'], 'note')} "
             f"written" if p["notes_to_write"] else f"{plural(p['notes'], 'note')} read"]
    if p["texts_total"]:
        parts.append(f"{p['texts_embedded']} of {plural(p['texts_total'], 'text')} embedded")
    if p["texts_per_s"]:
        parts.append(f"{p['texts_per_s']:g} texts/s")
    if p["eta_seconds"] is not None:
        parts.append(f"about {p['eta_seconds']:.0f} s left")
    return "importing " + parts[0] + " " + ", ".join(parts[1:])


class _ProgressLines:
    """A line every PROGRESS_EVERY_S seconds on stderr while the import runs, when stderr is no terminal."""

    def __init__(self, app, every: float | None = None) -> None:  # noqa: ANN001 - a Mindnet
        self.app, self.every = app, every or PROGRESS_EVERY_S
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mindnet-progress", daemon=True)

    def __enter__(self) -> _ProgressLines:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._done.wait(self.every):
            p = self.app.progress.as_dict()
            if p["running"]:
                print(progress_line(p), file=sys.stderr, flush=True)


def _ingest_with_progress(app, vault: Path, args: argparse.Namespace):
    lines = _ProgressLines(app) if not args.json and not err_console.is_terminal else nullcontext()
    with lines, Progress(TextColumn("[bold]importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err_console, transient=True,
                  disable=args.json or not err_console.is_terminal) as bar:
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=path)

        def confirm(deleting: int, indexed: int) -> bool:
            if args.yes:
                return True
            bar.stop()
            return _confirm(f"delete {deleting} of the {plural(indexed, 'note')} in the index (the vault {vault} "
                            f"no longer has them)?")

        return app.ingest(vault, full=args.full, progress=progress, confirm_deletes=confirm)


def cmd_dry_run(args: argparse.Namespace) -> int:
    from mindnet.indexing.pipeline import dry_run_payloads, plan_vault
    from mindnet.indexing.report import ImportReport
    settings = _settings(args)
    vault = Path(args.vault or settings.vault_root)
    report = ImportReport(vault=str(vault))
    planned = plan_vault(vault, settings.types, report)
    data = dry_run_payloads(planned, settings.types)
    data["issues"] = [str(i) for i in report.issues]
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from mindnet.indexing.integrity import check_index, link_audit
    from mindnet.service import Mindnet
    settings = _settings(args)
    from mindnet.errors import StoreError
    from mindnet.retrieval.graph_file import graph_status
    app = Mindnet(settings, read_only=True)
    try:
        report = check_index(app.store)
        graph = graph_status(app.store)
        audits = link_audit(app.store) if getattr(args, "links", False) else None
        paths = {} if args.json else _note_paths(app.store, {u["note_id"] for u in report.unresolved})
    except StoreError as exc:
        if app.opened:        # a damaged index: main reports it with how to repair it
            raise
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")   # no index at all
        return 1
    finally:
        app.close()
    data = report.as_dict() | {"graph": graph}
    if audits is not None:
        data["links"] = [{"note": a.path, "links": a.links} for a in audits]
    if args.json:
        console.print_json(json.dumps(data))
    else:
        if audits is not None:
            render_link_audit(data["links"])
        render_check(data | {"unresolved": [u | {"path": paths.get(u["note_id"])} for u in data["unresolved"]]},
                     verbose=args.list_all)
    return 1 if report.broken else 0


def _note_paths(store, note_ids: set[str]) -> dict[str, str]:  # noqa: ANN001 - a Store
    """note id -> vault path, for the notes `check` names."""
    from mindnet.store.collections import point_id
    ids = sorted(note_ids)
    records = store.retrieve("notes", [point_id(i) for i in ids], payload=["note_id", "path"]) if ids else []
    return {r.payload["note_id"]: r.payload.get("path") for r in records if r.payload.get("note_id")}


def render_check(data: dict, *, verbose: bool = False) -> None:
    """Counts, then each problem by name (the first CHECK_SHOWN unless `verbose`), then the verdict."""
    from mindnet.cli_render import CHECK_SHOWN, check_problems
    console.print(f"notes {data['notes']}, chunks {data['chunks']}, edges {data['edges']}; "
                  f"{plural(len(data['unresolved']), 'unresolved link')}", highlight=False)
    problems = check_problems(data)
    shown = problems if verbose else problems[:CHECK_SHOWN]
    for key, line in shown:
        console.print((f"[red]{key}[/red]: " if key else "") + escape(line), highlight=False)
    if len(problems) > len(shown):
        console.print(f"... and {len(problems) - len(shown)} more (--verbose for all)", highlight=False)
    if data["graph"] in ("stale", "missing", "corrupt"):
        console.print(f"link graph file: {data['graph']} (rebuilt from the edges when the index is next "
                      f"opened by an import or a server)")
    if data["unembedded"]:
        console.print(f"not embedded yet: {plural(data['unembedded'], 'chunk')} (found by keywords and links; "
                      f"`mindnet ingest` or a running server adds their vectors)", highlight=False)
    console.print(_check_verdict(data))


def link_line(link: dict) -> str:
    """One link of `check --links`: as written -> what it resolved to (by which rule)."""
    from mindnet.indexing.integrity import RULE_WORDS
    written = (link.get("text") or "") + (f"#{link['anchor']}" if link.get("anchor") else "")
    syntax = "markdown link" if link.get("rule_id") == "explicit:markdown" else link.get("rule_id")
    if link.get("kind") == "attachment":
        return f"{written} -> a file (attachment, {syntax})"
    if not link.get("resolved"):
        return f"{written} -> unresolved '{link.get('target')}' ({syntax})"
    where = link.get("target") or "?"
    if link.get("section"):
        where += f", section '{link['section']}'"
    elif link.get("anchor"):
        where += f" (no '#{link['anchor']}' there: the whole note)"
    by = RULE_WORDS.get(str(link.get("by")), str(link.get("by")))
    if link.get("by") in ("id", "alias", "title"):
        by += ": mindnet goes further, Obsidian leaves it unresolved"
    if int(link.get("candidates") or 1) > 1:
        by += f"; {plural(int(link['candidates']), 'note')} have this name"
    kind = "" if link.get("kind") == "references" else f", {link.get('kind')}"
    return f"{written} -> {where} ({by}; {syntax}{kind})"


def render_link_audit(notes: list[dict]) -> None:
    for note in notes:
        console.print(f"[bold]{escape(note['note'])}[/bold]", highlight=False)
        for link in note["links"]:
            console.print(f"  {escape(link_line(link))}", highlight=False, soft_wrap=True)


# what an incremental import repairs by itself: it finishes pending notes, removes points no note lists and
# derives every note's edges again (an edge to a deleted note is rewritten); a missing collection is created and
# the whole vault written into it
_INGEST_REPAIRS = {"unfinished_notes", "unlisted", "orphan_chunks", "dangling_edges", "unfinished_import",
                   "missing_collections"}


def _check_verdict(data: dict) -> str:
    if data["ok"]:
        return "[green]index OK[/green]"
    problems = {k for k, v in data.items() if isinstance(v, list) and v and k != "unresolved"}
    fix = "mindnet ingest" if problems <= _INGEST_REPAIRS else "mindnet ingest --full"
    return f"[red]index BROKEN[/red]: run `{fix}`"


def cmd_watch(args: argparse.Namespace) -> int:
    from mindnet.live import LiveIndex, Reimport
    from mindnet.service import Mindnet
    mindnet = Mindnet(_settings(args))
    mindnet.check_vault()   # an index built from another vault: refused before anything imports into it
    _ = mindnet.store

    def show(r: Reimport) -> None:
        d = r.as_dict()
        what = ", ".join(f"{k} {d[k]}" for k in ("new", "changed", "moved", "deleted") if d[k]) or "no changes"
        console.print(f"re-imported '{escape(r.label)}' in {r.seconds:.1f} s: {what}", highlight=False)
        for line in d["skipped"]:
            console.print(escape(line), highlight=False)

    live = LiveIndex(mindnet, watch=True)
    live.on_reimport(show)
    console.print(f"watching {escape(str(mindnet.settings.vault_root))} and "
                  f"{escape(str(mindnet.settings.types_path))}; Ctrl-C stops", highlight=False)
    shown = None
    signal.signal(signal.SIGTERM, _stop_on_sigterm)   # a service manager's stop closes the index too
    try:
        live.start()
        while True:   # Ctrl-C ends it (main reports the interruption)
            time.sleep(1)
            if live.error and live.error != shown:
                err_console.print(f"[red]error:[/red] {escape(live.error)}", highlight=False)
            shown = live.error
    finally:
        live.stop()
        mindnet.close()
