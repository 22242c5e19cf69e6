"""`mindnet feedback-report`: the ratings per strategy and per note (data flywheel)."""

from __future__ import annotations

import argparse
import json
import sys

from rich.markup import escape
from rich.table import Table

from mindnet.commands.common import _settings, console, plural


def render_feedback(data: dict) -> None:
    from mindnet.logs import FEEDBACK_REASONS
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
    reasons = {k: n for k, n in (data.get("reasons") or {}).items() if n}
    if reasons:
        console.print("Reasons given for answers: " + ", ".join(
            f"{FEEDBACK_REASONS.get(k, k)} {n}" for k, n in reasons.items()))
    remarks = data.get("remarks") or []
    if remarks:
        t = Table(title="Answers rated with reasons or a comment (newest first)")
        for col in ("question", "score", "reasons", "comment"):
            t.add_column(col)
        for m in remarks:
            t.add_row(escape(m["query_text"]), str(m["score"]),
                      escape(", ".join(FEEDBACK_REASONS.get(k, k) for k in m["reasons"])), escape(m["comment"]))
        console.print(t)


def cmd_feedback_report(args: argparse.Namespace) -> int:
    from mindnet.logs import FlywheelLogs
    data = FlywheelLogs(_settings(args).log_dir).feedback_report()
    if args.json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        render_feedback(data)
    return 0
