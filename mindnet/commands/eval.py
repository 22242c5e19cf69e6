"""`mindnet eval`: measure retrieval on a BEIR benchmark or on the user's vault."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mindnet.commands.common import _settings, console, err_console, plural


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
