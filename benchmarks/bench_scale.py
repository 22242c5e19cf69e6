"""Scale benchmark: mindnet's own costs on a generated vault of N notes (issue 13).

    python -m benchmarks.bench_scale --notes 1000 10000 30000 [--queries 100] [--work DIR] [--json]
    python -m benchmarks.bench_scale --notes 10000 --generate-only OUT    # only write the vault

For each N a linked vault of realistic shape is generated (`scale_vault`: short handles, common-word titles,
daily notes, MOCs linking 50-200 notes, 5-10 wikilinks per note, tags, frontmatter types; deterministic by
--seed), and embedded with `hash-benchmark`, a deterministic offline word-hash embedding that is
BENCHMARK-ONLY: it has no model cost and no semantics, so the figures are mindnet's own (Qdrant Edge, graph,
graph, BM25, scoring). Every step runs as the user runs it, in its own process, in a fresh folder:
- `mindnet ingest` (fresh), then again with nothing changed; wall time and peak RSS of each process;
- `mindnet check`;
- `mindnet serve` (with the UI, --no-watch --no-import) until `GET /health` answers, then the first hybrid
  query over HTTP; the server's peak RSS;
- a Python process: opening the index (`Mindnet(settings)`, its store and link graph), the first hybrid query, then
  every query in each mode (plain `VectorIndexRetriever`, semantic, hybrid depth 0/1/2), interleaved query by
  query in rotated order so the ratios to plain are measured under the same load; median, p95 and max;
- the Qdrant folder's size on disk.
A table follows, and with several N the growth factor of each figure from one N to the next (N grows by
the factor in the header: import should grow at most as fast, query latency slower).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.scale_vault import generate_vault

BACKEND = "hash-benchmark"
MODE_ORDER = ["plain", "semantic", "hybrid-d0", "hybrid-d1", "hybrid-d2"]
SERVE_TIMEOUT = 1800.0      # seconds a server may take to answer /health before the run gives up
QUERY_TOP_K = 10


# --------------------------------------------------------------------------- processes


def _env(data: Path, vault: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDNET_")}
    env.update(MINDNET_EMBEDDING=BACKEND, MINDNET_VAULT_ROOT=str(vault), MINDNET_QDRANT_PATH=str(data / "qdrant"),
               MINDNET_CACHE_DIR=str(data / "cache"), MINDNET_LOG_DIR=str(data / "logs"),
               MINDNET_COLLECTION_PREFIX="bench", PYTHONUNBUFFERED="1")
    return env


# each measured step runs in its own Python process, which writes its own peak RSS (ru_maxrss, KB on Linux)
# to the file BENCH_RSS_FILE names when it exits
_RSS_HOOK = ("import atexit, os, resource; atexit.register(lambda: open(os.environ['BENCH_RSS_FILE'], 'w')"
             ".write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))")


def _mindnet(*args: str) -> list[str]:
    return [sys.executable, "-c", f"{_RSS_HOOK}; import sys; from mindnet.cli import main; sys.exit(main())",
            *args]


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Run `cmd` to its end: (wall seconds, peak RSS of that process in MB, stdout). Raises on failure."""
    rss_file = cwd / "rss.txt"
    rss_file.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env={**env, "BENCH_RSS_FILE": str(rss_file)}, cwd=cwd, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[3:])} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    rss = int(rss_file.read_text()) / 1024 if rss_file.exists() else 0.0
    return wall, rss, proc.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as resp:   # noqa: S310 - 127.0.0.1 only
        return json.loads(resp.read())


def _post(url: str, body: dict, timeout: float = 3600.0) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:   # noqa: S310 - 127.0.0.1 only
        return json.loads(resp.read())


def _vm_hwm(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _serve(env: dict[str, str], cwd: Path, query: str) -> dict[str, float]:
    """Start `mindnet serve`, time it until /health answers and the first hybrid query; stop it."""
    port = _free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(_mindnet("serve", "--host", "127.0.0.1", "--port", str(port), "--no-watch",
                                     "--no-import"), env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"mindnet serve exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
            try:
                _get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if time.perf_counter() - start > SERVE_TIMEOUT:
                    raise RuntimeError(f"mindnet serve did not answer /health within {SERVE_TIMEOUT:.0f} s") \
                        from None
                time.sleep(0.1)
        ready = time.perf_counter() - start
        # the index opens in the background (`searchable` once it is open): time the first answer
        while not _get(f"http://127.0.0.1:{port}/health", timeout=30).get("searchable"):
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise RuntimeError(f"mindnet serve did not answer searches within {SERVE_TIMEOUT:.0f} s")
            time.sleep(0.05)
        searchable = time.perf_counter() - start
        hits = _post(f"http://127.0.0.1:{port}/query", {"query": query, "mode": "hybrid", "top_k": QUERY_TOP_K,
                                                        "expand": {"depth": 1}}).get("hits")
        answered = time.perf_counter() - start if hits else float("nan")
        # /health answers while the index still opens in the background (`opening`); time that too
        while _get(f"http://127.0.0.1:{port}/health", timeout=30).get("opening"):
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise RuntimeError(f"mindnet serve did not open the index within {SERVE_TIMEOUT:.0f} s")
            time.sleep(0.1)
        opened = time.perf_counter() - start
        q0 = time.perf_counter()
        _post(f"http://127.0.0.1:{port}/query", {"query": query, "mode": "hybrid", "top_k": QUERY_TOP_K,
                                                 "expand": {"depth": 1}})
        first = time.perf_counter() - q0
        q0 = time.perf_counter()
        _post(f"http://127.0.0.1:{port}/query", {"query": query + " again", "mode": "hybrid",
                                                 "top_k": QUERY_TOP_K, "expand": {"depth": 1}})
        second = time.perf_counter() - q0
        rss = _vm_hwm(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {"serve_ready_s": ready, "serve_searchable_s": searchable, "serve_answered_s": answered,
            "serve_open_s": opened, "serve_first_query_s": first,
            "serve_second_query_s": second, "serve_rss_mb": rss}


# --------------------------------------------------------------------------- the query worker


def _worker(queries_file: Path) -> int:
    """Runs in its own process (env set by the parent): open the index, first query, then all modes."""
    from mindnet.evaluation.metrics import latency_summary
    from mindnet.evaluation.plain import plain_retriever
    from mindnet.evaluation.runner import MODES, _request, _timed
    from mindnet.service import Mindnet
    from mindnet.settings import Settings

    queries = json.loads(queries_file.read_text(encoding="utf-8"))
    start = time.perf_counter()
    app = Mindnet(Settings.from_env())
    retriever = app.retriever      # opens the index and reads the link graph
    opened = time.perf_counter() - start
    _, first = _timed(lambda: retriever.search(_request(queries[0], MODES["hybrid-d1"], QUERY_TOP_K)).nodes)
    searchable = opened + first
    plain = plain_retriever(app.store, app.embed_model, QUERY_TOP_K)
    runners = {"plain": plain.retrieve}
    runners.update({m: (lambda q, s=MODES[m]: retriever.search(_request(q, s, QUERY_TOP_K)).nodes)
                    for m in MODE_ORDER[1:]})
    for name in MODE_ORDER:      # one warm-up each (caches, lazy imports): the timings are warm
        runners[name](queries[1 % len(queries)])
    seconds: dict[str, list[float]] = {m: [] for m in MODE_ORDER}
    for i, q in enumerate(queries):
        for name in MODE_ORDER[i % len(MODE_ORDER):] + MODE_ORDER[: i % len(MODE_ORDER)]:
            _, took = _timed(lambda name=name, q=q: runners[name](q))
            seconds[name].append(took)
    app.close()
    out: dict[str, Any] = {"open_s": opened, "first_query_s": first, "searchable_s": searchable, "modes": {}}
    for name, values in seconds.items():
        lat = latency_summary(values)
        out["modes"][name] = {"median_ms": 1000 * lat["median"], "p95_ms": 1000 * lat["p95"],
                              "max_ms": 1000 * max(values)}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


# --------------------------------------------------------------------------- one size


def _du_mb(path: Path) -> float:
    # blocks in use (the engine preallocates its write-ahead log and pages as sparse files)
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2 ** 20 if path.exists() else 0.0


def measure(notes: int, work: Path, *, seed: int, queries: int, log=lambda s: None) -> dict[str, Any]:
    """All figures for one vault size; `work` is an empty folder of its own."""
    vault, data = work / "vault", work / "data"
    data.mkdir(parents=True, exist_ok=True)
    env = _env(data, vault)
    t0 = time.perf_counter()
    plan = generate_vault(vault, notes, seed=seed, queries=queries)
    out: dict[str, Any] = {"notes": notes, "generate_s": time.perf_counter() - t0, "words": plan.words,
                           "wikilinks": plan.wikilinks}
    log(f"N={notes}: vault written ({plan.words} words, {plan.wikilinks} wikilinks); importing")
    wall, rss, stdout = _run(_mindnet("ingest", "--json"), env, work)
    report = json.loads(stdout)
    out.update(import_s=wall, import_rss_mb=rss, import_embedding_s=report["seconds_embedding"],
               chunks=report["chunks"], edges=report["edges"], edges_by_kind=report["edges_by_kind"],
               mention_edges=report.get("mention_edges", 0))
    log(f"N={notes}: import {wall:.1f} s; re-import")
    wall, rss, stdout = _run(_mindnet("ingest", "--json"), env, work)
    again = json.loads(stdout)
    out.update(reimport_s=wall, reimport_rss_mb=rss, reimport_changed=again["new"] + again["changed"])
    log(f"N={notes}: re-import {wall:.1f} s; check")
    wall, rss, _ = _run(_mindnet("check", "--json"), env, work)
    out.update(check_s=wall, check_rss_mb=rss)
    out["qdrant_mb"] = _du_mb(data / "qdrant")
    out["data_mb"] = _du_mb(data)
    texts = [q for q, _ in plan.queries]
    log(f"N={notes}: check {wall:.1f} s; serve")
    out.update(_serve(env, work, texts[0]))
    log(f"N={notes}: serve ready {out['serve_ready_s']:.1f} s; queries")
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(texts), encoding="utf-8")
    worker_cmd = [sys.executable, "-c", f"{_RSS_HOOK}; import sys; from benchmarks.bench_scale import "
                  "main; sys.exit(main())", "--worker", str(qfile)]
    # the worker imports this module, which is not installed: the checkout's root goes on its path
    root = str(Path(__file__).resolve().parents[1])
    worker_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))}
    wall, rss, stdout = _run(worker_cmd, worker_env, work)
    worker = json.loads(stdout.strip().splitlines()[-1])
    out.update(api_open_s=worker["open_s"], api_first_query_s=worker["first_query_s"], query_rss_mb=rss,
               api_searchable_s=worker["searchable_s"], queries=len(texts), modes=worker["modes"])
    return out


# --------------------------------------------------------------------------- output


ROWS: list[tuple[str, str, str]] = [   # key, label, format
    ("chunks", "chunks", "{:.0f}"), ("edges", "edges", "{:.0f}"), ("mention_edges", "mention edges", "{:.0f}"),
    ("import_s", "import (s)", "{:.1f}"), ("import_embedding_s", "  of which embedding (s)", "{:.1f}"),
    ("import_rss_mb", "import peak RSS (MB)", "{:.0f}"), ("reimport_s", "unchanged re-import (s)", "{:.1f}"),
    ("check_s", "check (s)", "{:.1f}"), ("serve_ready_s", "serve until /health (s)", "{:.1f}"),
    ("serve_searchable_s", "serve until searchable (s)", "{:.1f}"),
    ("serve_answered_s", "serve until a depth-1 query has hits (s)", "{:.1f}"),
    ("serve_open_s", "serve until index open (s)", "{:.1f}"),
    ("serve_first_query_s", "then first query via HTTP, depth 1 (s)", "{:.2f}"),
    ("serve_second_query_s", "second query via HTTP (s)", "{:.2f}"),
    ("serve_rss_mb", "serve peak RSS (MB)", "{:.0f}"),
    ("api_open_s", "open index in Python (s)", "{:.1f}"),
    ("api_first_query_s", "first query in Python, depth 1 (s)", "{:.2f}"),
    ("api_searchable_s", "open + first query in Python (s)", "{:.1f}"),
    ("query_rss_mb", "query process peak RSS (MB)", "{:.0f}"), ("qdrant_mb", "index folder (MB)", "{:.0f}"),
]


def _flat(result: dict[str, Any]) -> dict[str, float]:
    flat = {k: float(result[k]) for k, _, _ in ROWS if k in result}
    plain = result["modes"]["plain"]["median_ms"] or 1e-9
    for mode in MODE_ORDER:
        m = result["modes"][mode]
        flat[f"{mode} median"] = m["median_ms"]
        flat[f"{mode} p95"] = m["p95_ms"]
        if mode != "plain":
            flat[f"{mode} ratio"] = m["median_ms"] / plain
    return flat


def table(results: list[dict[str, Any]]) -> str:
    """A Markdown table: one column per N, then the growth factor between neighbouring sizes."""
    flats = [_flat(r) for r in results]
    head = ["figure"] + [f"N={r['notes']:,}" for r in results]
    growth = [f"x{results[i + 1]['notes'] / results[i]['notes']:.0f} notes: growth"
              for i in range(len(results) - 1)]
    lines = ["| " + " | ".join(head + growth) + " |", "|" + "---|" * (len(head) + len(growth))]
    fmt = {k: f for k, _, f in ROWS}
    labels = {k: label for k, label, _ in ROWS}
    for mode in MODE_ORDER:
        for part, label in (("median", "median ms"), ("p95", "p95 ms"), ("ratio", "median / plain")):
            key = f"{mode} {part}"
            labels[key] = f"{mode} {label}"
            fmt[key] = "{:.2f}x" if part == "ratio" else "{:.1f}"
    for key, label in labels.items():
        if key not in flats[0]:
            continue
        cells = [fmt[key].format(f[key]) for f in flats]
        grow = [f"x{flats[i + 1][key] / flats[i][key]:.2f}" if flats[i][key] else "-"
                for i in range(len(flats) - 1)]
        lines.append("| " + " | ".join([label] + cells + grow) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, nargs="+", default=[1000], help="vault sizes (default 1000)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--queries", type=int, default=100, help="benchmark queries per size (default 100)")
    parser.add_argument("--work", type=Path, help="work folder (kept; default: a temp folder, removed)")
    parser.add_argument("--generate-only", type=Path, metavar="OUT",
                        help="only write the vault of --notes N notes to OUT (a new or empty folder)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON after the table")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker)
    if args.generate_only:
        if len(args.notes) != 1:
            parser.error("--generate-only writes one vault: give exactly one --notes N")
        try:
            plan = generate_vault(args.generate_only, args.notes[0], seed=args.seed, queries=args.queries)
        except ValueError as exc:
            parser.error(str(exc))
        kinds = {k: plan.count(k) for k in ("daily", "moc", "person", "common")}
        sys.stdout.write(f"wrote {len(plan.notes)} notes ({kinds}, {plan.wikilinks} wikilinks, "
                         f"{plan.words} words) to {args.generate_only}\n")
        return 0
    own = args.work is None
    work = Path(tempfile.mkdtemp(prefix="mindnet-scale-")) if own else args.work
    results: list[dict[str, Any]] = []
    try:
        for n in args.notes:
            folder = work / f"n{n}"
            if folder.exists():
                shutil.rmtree(folder)
            start_load = os.getloadavg()[0]
            results.append(measure(n, folder, seed=args.seed, queries=args.queries,
                                   log=lambda s: sys.stderr.write(s + "\n")))
            results[-1]["load_average"] = [start_load, os.getloadavg()[0]]
            # each size's figures as soon as they exist: a long run that is stopped keeps what it measured
            sys.stderr.write(f"{table(results)}\n")
            if not own:
                (work / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(f"{_header(args.queries)}\n\n{table(results)}\n")
    if args.json:
        sys.stdout.write(json.dumps(results, indent=1) + "\n")
    return 0


def _header(queries: int) -> str:
    load = os.getloadavg()
    return (f"bench_scale: embedding {BACKEND} (benchmark-only), {queries} queries per size, top_k {QUERY_TOP_K}, "
            f"{os.cpu_count()} cores, load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
