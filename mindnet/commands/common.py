"""What every command shares: the consoles it prints to, the settings its arguments select, counts in words
(`plural`) and asking the user a yes/no question."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from mindnet.cli_render import plural  # counts in words ("1 passage", "2 queries") in all output
from mindnet.settings import Settings

__all__ = ["console", "err_console", "plural", "_settings", "_confirm"]

console = Console()
err_console = Console(stderr=True)


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "vault", None):
        overrides["vault_root"] = args.vault
    if getattr(args, "index", None):
        overrides["qdrant_path"] = args.index
    return Settings.from_env(**overrides)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes", "j", "ja")
