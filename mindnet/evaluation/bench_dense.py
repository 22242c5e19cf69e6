"""The direct dense search against local Qdrant's own query, side by side on one index (round 5, issue 13).

    python -m mindnet.evaluation.bench_dense WORK/n10000 [--queries 60]

WORK/nN is a folder `bench_scale --work WORK` leaves (its vault, index and queries, embedded with the
benchmark-only `hash-benchmark`). Every query runs in each mode twice, once with mindnet's direct search over
local Qdrant's vector column (`mindnet.store.dense_local`, as shipped) and once with it turned off, so the
retriever asks Qdrant's query as before; the plain `VectorIndexRetriever` beside them. Modes and the two ways
are interleaved query by query in rotated order, so the ratios are measured under the same load. The results of
the two ways are the same (tests/test_dense_local.py); this prints what they cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

MODES = ["plain", "semantic", "hybrid-d0", "hybrid-d1", "hybrid-d2", "hybrid-d1 filtered by type"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mindnet.evaluation.bench_dense", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a size folder of a bench_scale --work run (WORK/n10000)")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args(argv)
    data, vault, queries_file = args.folder / "data", args.folder / "vault", args.folder / "queries.json"
    if not (data / "qdrant").is_dir() or not queries_file.is_file():
        parser.error(f"{args.folder}: no bench_scale index here (expected data/qdrant and queries.json; "
                     f"run `python -m mindnet.evaluation.bench_scale --notes N --work WORK` first)")
    os.environ.update(MINDNET_EMBEDDING="hash-benchmark", MINDNET_VAULT_ROOT=str(vault),
                      MINDNET_QDRANT_PATH=str(data / "qdrant"), MINDNET_CACHE_DIR=str(data / "cache"),
                      MINDNET_LOG_DIR=str(data / "logs"), MINDNET_COLLECTION_PREFIX="bench")
    sys.stdout.write(run(json.loads(queries_file.read_text(encoding="utf-8"))[: args.queries]) + "\n")
    return 0


def run(queries: list[str]) -> str:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.retrievers import VectorIndexRetriever

    import mindnet.retrieval.retriever as retriever_module
    from mindnet.evaluation.runner import MODES as SEARCH_MODES
    from mindnet.evaluation.runner import _request
    from mindnet.indexing.pipeline import chunk_vector_store
    from mindnet.retrieval.query import QueryRequest
    from mindnet.service import Mindnet
    from mindnet.settings import Settings

    app = Mindnet(Settings.from_env())
    retriever = app.retriever
    _ = app.client                      # Qdrant itself, not the start file
    index = VectorStoreIndex.from_vector_store(chunk_vector_store(app.client, app.settings.collection_prefix),
                                               embed_model=app.embed_model)
    plain = VectorIndexRetriever(index=index, similarity_top_k=10)
    a_type = retriever._lexical().types[0]

    def runner(mode: str):
        if mode == "plain":
            return plain.retrieve
        if mode.endswith("filtered by type"):
            return lambda q: retriever.search(QueryRequest(query=q, mode="hybrid", top_k=10,
                                                           filters={"types": [a_type]}))
        return lambda q: retriever.search(_request(q, SEARCH_MODES[mode], 10))

    direct = retriever_module.dense_top
    ways = {"direct": direct, "qdrant": lambda *a, **k: None}     # None: the retriever asks Qdrant's query
    seconds: dict[tuple[str, str], list[float]] = {(m, w): [] for m in MODES for w in ways}
    try:
        for mode in MODES:              # warm-up
            runner(mode)(queries[0])
        for i, q in enumerate(queries):
            for way in list(ways)[i % 2:] + list(ways)[: i % 2]:
                retriever_module.dense_top = ways[way]
                for mode in MODES[i % len(MODES):] + MODES[: i % len(MODES)]:
                    start = time.perf_counter()
                    runner(mode)(q)
                    seconds[(mode, way)].append(time.perf_counter() - start)
    finally:
        retriever_module.dense_top = direct
        app.close()
    plain_ms = 1000 * statistics.median(seconds[("plain", "direct")] + seconds[("plain", "qdrant")])
    lines = [f"bench_dense: {len(queries)} queries, load average {os.getloadavg()[0]:.1f}, plain median "
             f"{plain_ms:.1f} ms", "", "| mode (median) | Qdrant's query | direct | direct / plain | direct p95 |",
             "|---|---|---|---|---|"]
    for mode in MODES[1:]:
        before = 1000 * statistics.median(seconds[(mode, "qdrant")])
        after = 1000 * statistics.median(seconds[(mode, "direct")])
        p95 = 1000 * sorted(seconds[(mode, "direct")])[int(0.95 * (len(queries) - 1))]
        lines.append(f"| {mode} | {before:.1f} ms ({before / plain_ms:.2f}x) | {after:.1f} ms | "
                     f"{after / plain_ms:.2f}x | {p95:.1f} ms |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
