"""`mindnet mcp`: serve the vault to agents over MCP on stdin/stdout (or pass calls to a running server)."""

from __future__ import annotations

import argparse
import json
import sys

from rich.markup import escape

from mindnet.commands.common import _settings, err_console


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
    mindnet.serving = True       # searches are answered while it imports (Mindnet.serving)
    try:
        run_stdio(mindnet)
    finally:
        mindnet.close()
    return 0
