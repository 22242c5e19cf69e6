"""`mindnet suggest`: links (typed), type, tags and duplicates for a note or a draft; `--apply` writes the links."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.markup import escape

from mindnet.commands.common import _confirm, _settings, console, err_console, plural
from mindnet.errors import NoteNotFoundError
from mindnet.settings import Settings


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
