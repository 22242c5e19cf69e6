"""The CLI start-up benchmark runs end to end (a smoke run: one run per command, the benchmark-only embedding)
and reports every command; the figures themselves are measured by hand (docs/benchmarks.md)."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_cli import COMMANDS, SERVED, main


def test_the_benchmark_reports_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--runs", "1", "--embedding", "hash-benchmark", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out["rows"]) == {*COMMANDS, SERVED}
    for name, row in out["rows"].items():
        assert row["now"] > 0 and row["imports_s"] > 0, name
