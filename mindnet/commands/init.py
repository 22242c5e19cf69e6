"""`mindnet init`: write editable copies of the config, the prompts and a .env template."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from mindnet.commands.common import console, plural


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
