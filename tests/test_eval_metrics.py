"""Tests of the BEIR loader, the vault writer and the retrieval metrics (mindnet.evaluation)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from mindnet.errors import QueryError, VaultError
from mindnet.evaluation.beir import (
    BeirDataset,
    BeirDocument,
    load_beir,
    note_filename,
    slugify,
    write_as_vault,
)
from mindnet.evaluation.metrics import aggregate, latency_summary, mrr, ndcg_at_k, recall_at_k

# the shared benchmark data lies beside the checkout (../shared), as on the developers' machines and in CI
MUSIQUE = next((p for p in (Path(__file__).resolve().parents[2] / "shared/eval/musique_100",
                            Path("/work/shared/eval/musique_100")) if p.is_dir()),
               Path(__file__).resolve().parents[2] / "shared/eval/musique_100")
LOG2_3 = math.log2(3)  # 1.5849625...

# --------------------------------------------------------------------------- nDCG


@pytest.mark.parametrize(("ranked", "qrels", "k", "expected"), [
    # perfect order
    (["a", "b"], {"a": 2, "b": 1}, 10, 1.0),
    # DCG = 0/1 + 2/log2(3) + 1/log2(4) = 1.2618595 + 0.5 = 1.7618595
    # IDCG = 2/1 + 1/log2(3) + 1/log2(4) = 2 + 0.6309298 + 0.5 = 3.1309298  -> 0.5627273
    (["x", "a", "b"], {"a": 2, "b": 1, "c": 1}, 3, (2 / LOG2_3 + 0.5) / (2 + 1 / LOG2_3 + 0.5)),
    # the relevant doc is at rank 3, outside the cut
    (["x", "y", "a"], {"a": 1}, 2, 0.0),
    # the ideal ranking is cut at k too: IDCG@1 = 1
    (["a"], {"a": 1, "b": 1, "c": 1}, 1, 1.0),
    # a repeated doc counts once: top 2 distinct is [a, b]
    (["a", "a", "b"], {"a": 1, "b": 1}, 2, 1.0),
    # grade 0 gives no gain and no ideal gain
    (["a"], {"a": 0}, 10, 0.0),
    (["a", "b"], {}, 10, 0.0),
])
def test_ndcg_at_k(ranked: list[str], qrels: dict[str, int], k: int, expected: float) -> None:
    assert ndcg_at_k(ranked, qrels, k) == pytest.approx(expected, rel=1e-12)


def test_ndcg_worked_value() -> None:
    assert ndcg_at_k(["x", "a", "b"], {"a": 2, "b": 1, "c": 1}, 3) == pytest.approx(0.5627273, abs=1e-7)


# --------------------------------------------------------------------------- recall, MRR


@pytest.mark.parametrize(("k", "expected"), [
    (1, 0.0),   # [x]
    (2, 0.5),   # [x, a]: 1 of the 2 relevant (c has grade 0)
    (4, 1.0),   # [x, a, c, b]
])
def test_recall_at_k(k: int, expected: float) -> None:
    assert recall_at_k(["x", "a", "c", "b"], {"a": 1, "b": 2, "c": 0}, k) == expected


def test_recall_without_relevant_is_zero() -> None:
    assert recall_at_k(["a"], {"a": 0}, 10) == 0.0


@pytest.mark.parametrize(("ranked", "k", "expected"), [
    (["x", "y", "a", "b"], 100, 1 / 3),
    (["x", "y", "a"], 2, 0.0),        # first relevant beyond the cut
    (["x", "x", "a"], 2, 0.5),        # the repeated x takes one rank
    (["x", "y"], 100, 0.0),
])
def test_mrr(ranked: list[str], k: int, expected: float) -> None:
    assert mrr(ranked, {"a": 1, "b": 1}, k) == expected


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_invalid_cutoff_raises(k: object) -> None:
    with pytest.raises(QueryError, match="k: .* is not a positive integer"):
        ndcg_at_k(["a"], {"a": 1}, k)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- aggregate


def test_aggregate_means_over_qrels_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    runs = {"q1": ["a"], "q2": ["x", "b"], "q_unjudged": ["a"]}  # q3 missing -> empty ranking
    # q1: all 1.  q2: ndcg@10 = 1/log2(3) = 0.6309298, recall = 1, mrr = 1/2.  q3: all 0.
    assert aggregate(runs, qrels) == pytest.approx({
        "ndcg@10": (1 + 1 / LOG2_3) / 3,    # 0.5436433
        "recall@2": 2 / 3, "recall@5": 2 / 3, "recall@10": 2 / 3, "recall@100": 2 / 3,
        "mrr": 1.5 / 3,
    }, rel=1e-12)


def test_aggregate_key_order() -> None:
    assert list(aggregate({}, {"q": {"a": 1}})) == [
        "ndcg@10", "recall@2", "recall@5", "recall@10", "recall@100", "mrr"]


def test_aggregate_without_qrels_raises() -> None:
    with pytest.raises(QueryError, match="qrels: no queries"):
        aggregate({"q": ["a"]}, {})


# --------------------------------------------------------------------------- latency


@pytest.mark.parametrize(("seconds", "expected"), [
    # sorted [1,2,3,4]: median (2+3)/2; p95 at rank 0.95*3 = 2.85 -> 3 + 0.85*(4-3)
    ([4.0, 1.0, 3.0, 2.0], {"median": 2.5, "p95": 3.85}),
    # sorted [.05,.1,.2,.5,.7,.9,1.3]: p95 at rank 0.95*6 = 5.7 -> 0.9 + 0.7*(1.3-0.9)
    ([0.1, 0.5, 0.2, 0.9, 1.3, 0.05, 0.7], {"median": 0.5, "p95": 1.18}),
    ([0.3], {"median": 0.3, "p95": 0.3}),
])
def test_latency_summary(seconds: list[float], expected: dict[str, float]) -> None:
    assert latency_summary(seconds) == pytest.approx(expected, rel=1e-12)


def test_latency_summary_of_nothing_raises() -> None:
    with pytest.raises(QueryError, match="seconds: no timings"):
        latency_summary([])


# --------------------------------------------------------------------------- BEIR loader

CORPUS = [
    {"_id": "d1", "title": "Alpha", "text": "About alpha."},
    {"_id": "d2", "title": "", "text": "No title here."},
    {"_id": "d3", "title": "Alpha", "text": "Another alpha."},
]
QUERIES = [
    {"_id": "q1", "text": "what is alpha", "answer": "a letter"},
    {"_id": "q2", "text": "untitled"},
    {"_id": "q3", "text": "a query without qrels"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\n"


def _write_beir(root: Path, qrels_at: str = "qrels/test.tsv", qrels: str = QRELS,
                corpus_lines: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = corpus_lines if corpus_lines is not None else [json.dumps(d) for d in CORPUS]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n", encoding="utf-8")
    (root / qrels_at).parent.mkdir(parents=True, exist_ok=True)
    (root / qrels_at).write_text(qrels, encoding="utf-8")
    return root


@pytest.mark.parametrize("qrels_at", ["qrels/test.tsv", "qrels.tsv"])
def test_load_beir_reads_both_qrels_locations(tmp_path: Path, qrels_at: str) -> None:
    dataset = load_beir(_write_beir(tmp_path / "tiny", qrels_at))
    assert dataset == BeirDataset(
        name="tiny",
        corpus={"d1": BeirDocument("d1", "Alpha", "About alpha."),
                "d2": BeirDocument("d2", "", "No title here."),
                "d3": BeirDocument("d3", "Alpha", "Another alpha.")},
        queries={"q1": "what is alpha", "q2": "untitled"},  # q3 has no qrels
        qrels={"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1}},
    )


@pytest.mark.parametrize(("corpus_lines", "where", "what"), [
    (['{"_id": "d1", "text": "x"}', '{"_id": "d2", "text": '], "corpus.jsonl:2", "invalid JSON"),
    (['{"_id": "d1", "text": "x"}', '["d2"]'], "corpus.jsonl:2", "expected a JSON object"),
    (['{"title": "t", "text": "x"}'], "corpus.jsonl:1", "field '_id' is None"),
    (['{"_id": "d1", "text": "x"}', '{"_id": "d1", "text": "y"}'], "corpus.jsonl:2", "duplicate document id"),
])
def test_malformed_corpus_line_names_file_and_line(tmp_path: Path, corpus_lines: list[str], where: str,
                                                    what: str) -> None:
    root = _write_beir(tmp_path, qrels="query-id\tcorpus-id\tscore\n", corpus_lines=corpus_lines)
    with pytest.raises(VaultError, match=f"{where}: {what}"):
        load_beir(root)


@pytest.mark.parametrize(("qrels", "what"), [
    ("query-id\tcorpus-id\tscore\nq1\td1\n", "expected 3 tab-separated fields, got 2"),
    ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "score 'high' is not an integer"),
    ("query-id\tcorpus-id\tscore\nq1\td9\t1\n", "document id 'd9' is not in corpus.jsonl"),
    ("query-id\tcorpus-id\tscore\nq9\td1\t1\n", "query id 'q9' is not in queries.jsonl"),
])
def test_malformed_qrels_line_names_file_and_line(tmp_path: Path, qrels: str, what: str) -> None:
    with pytest.raises(VaultError, match=f"qrels.tsv:2: {what}"):
        load_beir(_write_beir(tmp_path, "qrels.tsv", qrels))


def test_missing_qrels_raises_with_hint(tmp_path: Path) -> None:
    root = _write_beir(tmp_path)
    (root / "qrels" / "test.tsv").unlink()
    with pytest.raises(VaultError, match="no qrels file .*qrels/test.tsv or qrels.tsv"):
        load_beir(root)


@pytest.mark.skipif(not MUSIQUE.is_dir(), reason=f"shared benchmark data not present at {MUSIQUE}")
def test_real_musique_100_loads() -> None:
    dataset = load_beir(MUSIQUE)
    assert (len(dataset.queries), len(dataset.corpus), sum(len(d) for d in dataset.qrels.values())) == (
        100, 1890, 237)


# --------------------------------------------------------------------------- vault writer


@pytest.mark.parametrize(("title", "expected"), [
    ("Journal of Mathematical Physics", "journal-of-mathematical-physics"),
    ("Hello Love (song)", "hello-love-song"),
    ("Über Straßen", "uber-straen"),   # NFKD drops the umlaut mark; ß has no ASCII decomposition
    ("???", "note"),
    ("x" * 80, "x" * 60),
])
def test_slugify(title: str, expected: str) -> None:
    assert slugify(title) == expected


@pytest.mark.parametrize(("title", "shared", "expected"), [
    ("Alpha", False, "Alpha.md"),                       # a note's name is its file name: the title
    ("Alpha", True, "a6b3916b/Alpha.md"),               # shared by several documents: blake2b(b"d1", 4 bytes)
    ("The Legend of Zelda: Twilight Princess", False, "The Legend of Zelda Twilight Princess.md"),
    ("EMC EA/EB", False, "EMC EA EB.md"),              # no folders, nothing a link cannot hold
    ("[[x]] #y ^z | w", False, "x y z w.md"),
    ("...", False, "note.md"),
])
def test_note_filename_is_the_title_as_an_obsidian_file_name(title: str, shared: bool, expected: str) -> None:
    assert note_filename(BeirDocument("d1", title, ""), shared) == expected


def test_write_as_vault_returns_unique_relative_paths(tmp_path: Path) -> None:
    paths = write_as_vault(load_beir(_write_beir(tmp_path / "tiny")), tmp_path / "vault")
    # d1 and d3 share the title "Alpha": each goes into a folder named by its id's hash; d2 is named by its id
    assert paths == {"d1": "a6b3916b/Alpha.md", "d2": "d2.md",
                     "d3": note_filename(BeirDocument("d3", "Alpha", ""), True)}
    assert len(set(paths.values())) == 3


def test_written_note_has_frontmatter_and_body(tmp_path: Path) -> None:
    paths = write_as_vault(load_beir(_write_beir(tmp_path / "tiny")), tmp_path / "vault")
    assert (tmp_path / "vault" / paths["d1"]).read_text(encoding="utf-8") == (
        "---\nid: d1\ntitle: Alpha\n---\n\nAbout alpha.\n")


def test_empty_title_becomes_the_id(tmp_path: Path) -> None:
    paths = write_as_vault(load_beir(_write_beir(tmp_path / "tiny")), tmp_path / "vault")
    text = (tmp_path / "vault" / paths["d2"]).read_text(encoding="utf-8")
    assert yaml.safe_load(text.split("---\n")[1]) == {"id": "d2", "title": "d2"}


def test_numeric_looking_id_stays_a_string_in_frontmatter(tmp_path: Path) -> None:
    dataset = BeirDataset("n", {"0123": BeirDocument("0123", "T: x", "body")}, {}, {})
    paths = write_as_vault(dataset, tmp_path)
    text = (tmp_path / paths["0123"]).read_text(encoding="utf-8")
    assert yaml.safe_load(text.split("---\n")[1]) == {"id": "0123", "title": "T: x"}
