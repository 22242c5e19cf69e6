"""Tests of `mindnet eval`'s runner: a 6-document BEIR folder imported with hand-set fake embeddings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers_vault import fake_settings

from mindnet.errors import ConfigError
from mindnet.evaluation.runner import EVAL_TYPE, PLAIN, parse_modes, run_eval

KEYWORDS = ["apple", "banana", "cherry", "dates", "fig"]
DOCS = [("d1", "Apple", "apple apple orchard"), ("d2", "Banana", "banana banana"),
        ("d3", "Cherry", "cherry cherry"), ("d4", "Dates", "dates dates"),
        ("d5", "Split", "banana fig"), ("d6", "Fig", "fig fig")]
# q1 finds d1 first; q2's relevant d5 (banana + fig) ranks 2nd behind d2 (banana only)
QUERIES = {"q1": ("apple", "d1"), "q2": ("banana", "d5")}
METRIC_KEYS = ["ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10", "dup@5", "latency_ms", "latency_ratio"]


def keyword_embedding(text: str) -> list[float]:
    """One dimension per fruit word (its count), the rest near zero: cosine ranks by shared fruit."""
    words = text.lower().replace(":", " ").split()
    vec = [float(words.count(k)) for k in KEYWORDS] + [1e-3] * 59
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


def write_beir(folder: Path) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                                                 for i, t, x in DOCS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                  for q, (t, _) in QUERIES.items()), encoding="utf-8")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items()), encoding="utf-8")
    return folder


@pytest.fixture
def beir_run(tmp_path, fake_ollama):
    fake_ollama.embed_fn = keyword_embedding
    base = fake_settings(tmp_path, fake_ollama.url)
    folder = write_beir(tmp_path / "fruit")

    def run(**kwargs: object):
        return run_eval(folder, base=base, embedding="ollama", work_dir=tmp_path / "work", **kwargs)

    return run


def test_report_has_every_metric_for_each_mode_and_the_plain_retriever(beir_run) -> None:
    data = beir_run().as_dict()
    assert (data["docs"], data["queries"], data["top_k"]) == (6, 2, 20)
    assert list(data["modes"]) == ["semantic", "hybrid-d0", "hybrid-d1", "hybrid-d2", PLAIN]
    for figures in data["modes"].values():
        assert list(figures) == METRIC_KEYS
        assert list(figures["latency_ms"]) == ["median", "p95"]
    assert data["modes"][PLAIN]["latency_ratio"] == {"median": 1.0, "p95": 1.0}


def test_semantic_metrics_are_exact_and_match_the_plain_retriever(beir_run) -> None:
    modes = beir_run(modes=["semantic"]).modes
    # q1: d1 at rank 1; q2: d5 at rank 2 -> MRR (1 + 1/2) / 2, nDCG@10 (1 + 1/log2(3)) / 2
    assert modes["semantic"]["mrr@10"] == 0.75
    assert modes["semantic"]["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2, abs=1e-12)
    assert (modes["semantic"]["recall@1"], modes["semantic"]["recall@5"]) == (0.5, 1.0)
    for key in ("ndcg@10", "recall@1", "recall@5", "mrr@10", "dup@5"):
        assert modes[PLAIN][key] == modes["semantic"][key]


def test_a_second_run_reuses_the_index_and_embeds_nothing(beir_run) -> None:
    beir_run(modes=["semantic"])
    again = beir_run(modes=["semantic"]).import_report
    assert (again["new"], again["unchanged"], again["embedded_texts"]) == (0, 6, 0)


def test_each_document_is_one_chunk_of_the_eval_type(beir_run, tmp_path) -> None:
    report = beir_run(modes=["semantic"], keep=True)
    assert (report.import_report["notes"], report.import_report["chunks"]) == (6, 6)
    assert len(list((tmp_path / "work" / "vault").glob("*.md"))) == 6
    assert f"default_type: {EVAL_TYPE}" in (tmp_path / "work" / "types.yaml").read_text(encoding="utf-8")


def test_unknown_mode_is_rejected_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="semantic,hybrid-d0,hybrid-d1,hybrid-d2"):
        parse_modes("semantic,graph")


@pytest.mark.parametrize(("text", "depth", "modes"), [
    ("hybrid", 1, ["hybrid-d1"]), ("hybrid", 2, ["hybrid-d2"]), ("hybrid-nograph,semantic", 1,
                                                                ["hybrid-d0", "semantic"])])
def test_older_mode_names_still_work(text: str, depth: int, modes: list[str]) -> None:
    assert parse_modes(text, depth) == modes


def test_injected_mocs_link_random_documents_and_are_counted_in_the_top_10(beir_run, tmp_path) -> None:
    report = beir_run(modes=["hybrid-d1"], inject=2, seed=3, keep=True)
    work = tmp_path / "work-mocs2-seed3"
    mocs = sorted(p.name for p in (work / "vault").glob("moc-*.md"))
    assert mocs == ["moc-01.md", "moc-02.md"]
    text = (work / "vault" / "moc-01.md").read_text(encoding="utf-8")
    assert text.count("- [[d") == 6            # 50-200 links, capped at the corpus size
    assert report.import_report["notes"] == 8
    assert report.mocs["count"] == 2 and report.mocs["links"] == 12
    assert set(report.mocs["queries_with_moc_in_top10"]) == {"hybrid-d1", PLAIN}
