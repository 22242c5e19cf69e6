"""The MCP latency benchmark runs end to end (a smoke run: 3 calls per transport, the benchmark-only embedding)
and reports a figure for each transport; the figures themselves are measured by hand (docs/benchmarks.md)."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_mcp import main


def test_the_benchmark_reports_each_transport(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--calls", "3", "--embedding", "hash-benchmark", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out["rows"]) == {"mcp stdio", "mcp http /mcp", "http POST /query"}
    for row in out["rows"].values():
        assert row["calls"] == 3 and row["median_ms"] > 0
    assert out["rows"]["http POST /query"]["x_query"] == 1.0
