"""`mindnet query`: search the index (or the server holding it) and show the hits."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.markup import escape

from mindnet.commands.common import _settings, console, err_console


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
