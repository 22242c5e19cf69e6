"""Build a vault of N notes from a BEIR corpus (e.g. MuSiQue-100's 1,890 passages) for the live-index figures.

    python -m benchmarks.build_vault /work/shared/eval/musique_100 OUT_FOLDER [--notes 1000]

Passages are dealt round-robin onto N notes (1,890 passages -> 1,000 notes of one or two passages), each
passage a `##` section under its own title. Notes go to the type folders of config/types.yaml in turn
(concepts, projects, decisions, journal, people, values, sources, tasks), so every chunk profile is used,
and each note links to two others (`[[...]]`), so the graph has edges to expand. Deterministic: the same
corpus and N give the same vault.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mindnet.evaluation.beir import load_beir

FOLDERS = ["concepts", "projects", "decisions", "journal", "people", "values", "sources", "tasks"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60] or "note"


def build_vault(corpus: Path, target: Path, notes: int) -> int:
    docs = list(load_beir(corpus).corpus.values())
    groups: list[list] = [[] for _ in range(min(notes, len(docs)))]
    for i, doc in enumerate(docs):
        groups[i % len(groups)].append(doc)
    titles = [f"{g[0].title or g[0].id} ({n:04d})" for n, g in enumerate(groups)]
    for n, group in enumerate(groups):
        links = [titles[(n * 7 + 3) % len(groups)], titles[(n * 13 + 5) % len(groups)]]
        sections = "\n\n".join(f"## {d.title or d.id}\n\n{d.text}" for d in group)
        body = (f"---\ntitle: \"{titles[n].replace(chr(34), '')}\"\nid: mq{n:04d}\n---\n{sections}\n\n"
                f"Siehe auch: {', '.join(f'[[{t}]]' for t in links)}\n")
        path = target / FOLDERS[n % len(FOLDERS)] / f"{n:04d}-{_slug(group[0].title or group[0].id)}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return len(groups)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.build_vault", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="BEIR folder (corpus.jsonl)")
    parser.add_argument("target", type=Path, help="vault folder to create")
    parser.add_argument("--notes", type=int, default=1000)
    args = parser.parse_args(argv)
    count = build_vault(args.corpus, args.target, args.notes)
    sys.stdout.write(f"wrote {count} notes to {args.target}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
