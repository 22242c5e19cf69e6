"""The reliability drill (benchmarks.drill) on its smallest real path, so the script cannot rot: one
damaged-files round (the notes collection deleted) through `check`, `query`, `serve` and the repairing
`ingest`, its row in the JSON it writes."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import drill


def test_the_drill_repairs_a_deleted_notes_collection(tmp_path: Path, capsys) -> None:
    out = tmp_path / "drill.json"
    code = drill.main(["--quick", "--cases", "corrupt", "--damage", "notes-deleted", "--out", str(out)])
    printed = capsys.readouterr().out
    [row] = json.loads(out.read_text(encoding="utf-8"))
    assert (code, row["tried"], row["failed"], row["lost"]) == (0, 1, 0, 0), (row, printed)
    assert "repaired by `mindnet ingest`" in row["notes"][0] and row["probes"] > 0, row
    assert "| damaged files | 1 | 0 | 0 |" in printed, printed
