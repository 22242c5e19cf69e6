"""The scale benchmark: its generated vault, its benchmark-only hash embedding and a smoke run of the real path."""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_scale
from benchmarks.scale_vault import generate_vault
from mindnet.backends import make_embedding
from mindnet.evaluation.hash_embedding import HashBenchmarkEmbedding
from mindnet.settings import Settings
from mindnet.vault.links import extract_links


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.md")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_generated_vault_has_realistic_shape_and_is_deterministic(tmp_path: Path) -> None:
    a = generate_vault(tmp_path / "a", 600, seed=3)
    generate_vault(tmp_path / "b", 600, seed=3)
    generate_vault(tmp_path / "c", 600, seed=4)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b") != _digest(tmp_path / "c")
    assert len(list((tmp_path / "a").rglob("*.md"))) == 600
    assert a.count("daily") == 90 and a.count("moc") == 4 and a.count("person") == 48
    assert (tmp_path / "a" / "journal" / "2019-01-01.md").is_file()
    titles = [n.title for n in a.notes]
    assert any(len(t) <= 4 and n.kind == "person" for t, n in zip(titles, a.notes, strict=True))   # handles
    assert "Tags" in titles and "Canvas" in titles
    for note in a.notes:
        if note.kind == "moc":
            assert 50 <= len(note.links) <= 200
        else:
            assert 5 <= len(note.links) <= 10 or note.kind == "daily" and len(note.links) >= 3
    texts = [(tmp_path / "a" / n.path).read_text(encoding="utf-8") for n in a.notes]
    assert any("\\|" in t for t in texts)                          # escaped table links, as Obsidian writes
    assert sum(t.startswith("---\ntype: ") for t in texts) > 400   # frontmatter types on most notes
    assert sum(bool(re.search(r"(?<=\s)#\w", t)) for t in texts) > 50   # inline tags
    escaped = [ln for t in texts for ln in t.splitlines() if "\\|" in ln]
    assert all(not ref.target.endswith("\\") for ln in escaped for ref in extract_links(ln))
    assert len(a.queries) == 200 and all(q for q, _ in a.queries)


def test_generate_only_refuses_a_non_empty_folder(tmp_path: Path, capsys) -> None:
    (tmp_path / "x.md").write_text("hi", encoding="utf-8")
    with pytest.raises(SystemExit):
        bench_scale.main(["--notes", "50", "--generate-only", str(tmp_path)])
    assert "not empty" in capsys.readouterr().err
    assert bench_scale.main(["--notes", "50", "--generate-only", str(tmp_path / "v")]) == 0
    assert len(list((tmp_path / "v").rglob("*.md"))) == 50


def test_hash_embedding_is_deterministic_benchmark_only_and_never_default(caplog) -> None:
    assert Settings().embedding != "hash-benchmark"
    with caplog.at_level(logging.WARNING):
        model = make_embedding(Settings.from_env({"MINDNET_EMBEDDING": "hash-benchmark"}))
    assert isinstance(model, HashBenchmarkEmbedding)
    assert "benchmark-only" in caplog.text and "benchmark-only" in model.model_name
    a = np.array(model.get_text_embedding("Qdrant stores vectors and payloads"))
    b = np.array(HashBenchmarkEmbedding().get_text_embedding("Qdrant stores vectors and payloads"))
    assert a.shape == (384,) and np.allclose(a, b) and abs(np.linalg.norm(a) - 1) < 1e-5
    q = np.array(model.get_query_embedding("qdrant vectors"))
    other = np.array(model.get_text_embedding("lentil soup with carrots"))
    assert q @ a > q @ other                      # shared words: closer
    empty = np.array(model.get_text_embedding("   "))
    assert abs(np.linalg.norm(empty) - 1) < 1e-5   # never a zero vector


def test_smoke_run_through_the_real_path(tmp_path: Path) -> None:
    """Generate, import, re-import, check, serve until /health, and time every mode at a small N."""
    result = bench_scale.measure(120, tmp_path / "n120", seed=13, queries=8)
    assert result["chunks"] > 120 and result["edges_by_kind"]["references"] > 0
    assert result["edges_by_kind"].get("mentions", 0) > 0
    assert result["reimport_changed"] == 0
    assert result["serve_ready_s"] > 0 and result["serve_first_query_s"] > 0 and result["serve_rss_mb"] > 0
    assert result["serve_open_s"] >= result["serve_ready_s"]
    assert result["import_rss_mb"] > 50 and result["qdrant_mb"] > 0
    assert set(result["modes"]) == set(bench_scale.MODE_ORDER)
    assert all(m["p95_ms"] >= m["median_ms"] > 0 for m in result["modes"].values())
    text = bench_scale.table([result, {**result, "notes": 240}])
    assert "hybrid-d1 median / plain" in text and "x2 notes: growth" in text
