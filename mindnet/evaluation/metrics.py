"""Retrieval metrics as BEIR reports them (pytrec_eval definitions), plus a latency summary.

`ranked_ids` is one query's ranking, best first; `qrels` maps doc id -> graded relevance (> 0 is relevant).
A document that appears twice counts at its first rank only (several chunks of one note may be retrieved).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from mindnet.errors import QueryError


def _check_k(k: int, field: str = "k") -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"{k!r} is not a positive integer (fix: use a cut-off such as 10)", field=field)


def _top_k(ranked_ids: Iterable[str], k: int) -> list[str]:
    """The first k distinct ids, in order."""
    seen: dict[str, None] = {}
    for doc_id in ranked_ids:
        if len(seen) == k:
            break
        seen.setdefault(doc_id, None)
    return list(seen)


def ndcg_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """nDCG@k: linear graded gains, log2(rank + 1) discount (trec_eval's ndcg_cut); 0 if none relevant."""
    _check_k(k)
    dcg = sum(max(qrels.get(doc_id, 0), 0) / math.log2(rank + 1)
              for rank, doc_id in enumerate(_top_k(ranked_ids, k), start=1))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k; 0 without relevant."""
    _check_k(k)
    relevant = {doc_id for doc_id, grade in qrels.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_top_k(ranked_ids, k))) / len(relevant)


def mrr(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Reciprocal rank of the first relevant document within the top k; 0 if none."""
    _check_k(k)
    for rank, doc_id in enumerate(_top_k(ranked_ids, k), start=1):
        if qrels.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def aggregate(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], *,
              ndcg_ks: Sequence[int] = (10,), recall_ks: Sequence[int] = (2, 5, 10, 100),
              mrr_k: int = 100) -> dict[str, float]:
    """Mean of each metric over the queries in `qrels`.

    A query missing from `runs` counts as an empty ranking; run queries without qrels are ignored.
    Keys: "ndcg@<k>" ..., "recall@<k>" ..., "mrr" (cut at `mrr_k`).
    """
    if not qrels:
        raise QueryError("no queries to evaluate (fix: pass the qrels of at least one query)", field="qrels")
    for k in (*ndcg_ks, *recall_ks):
        _check_k(k, "ndcg_ks/recall_ks")
    _check_k(mrr_k, "mrr_k")
    totals: dict[str, float] = {f"ndcg@{k}": 0.0 for k in ndcg_ks}
    totals.update({f"recall@{k}": 0.0 for k in recall_ks})
    totals["mrr"] = 0.0
    for query_id, judged in qrels.items():
        ranking = runs.get(query_id, ())
        for k in ndcg_ks:
            totals[f"ndcg@{k}"] += ndcg_at_k(ranking, judged, k)
        for k in recall_ks:
            totals[f"recall@{k}"] += recall_at_k(ranking, judged, k)
        totals["mrr"] += mrr(ranking, judged, mrr_k)
    return {name: total / len(qrels) for name, total in totals.items()}


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """Median and 95th percentile (linear interpolation between closest ranks, as numpy's default)."""
    values = sorted(float(s) for s in seconds)
    if not values:
        raise QueryError("no timings (fix: time at least one query)", field="seconds")
    if len(values) == 1:
        return {"median": values[0], "p95": values[0]}
    return {"median": statistics.median(values),
            "p95": statistics.quantiles(values, n=100, method="inclusive")[94]}


def dup_at_k(ranked_ids: Sequence[str], k: int = 5) -> float:
    """Share of the first k result slots that repeat an id already listed above (several chunks of one note
    shown as separate hits); 0 for a ranking of distinct notes."""
    _check_k(k)
    head = list(ranked_ids)[:k]
    return (len(head) - len(set(head))) / len(head) if head else 0.0


NOTE_LEVEL = {"ndcg_ks": (10,), "recall_ks": (1, 5, 10), "mrr_k": 10}


def note_level(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
               raw: Mapping[str, Sequence[str]] | None = None) -> dict[str, float]:
    """The figures `mindnet eval` reports: nDCG@10, R@1/5/10, MRR@10 over distinct notes, and dup@5 over the
    raw result list (`raw`: note id of every returned item in order; `runs` when not given)."""
    figures = aggregate(runs, qrels, **NOTE_LEVEL)
    figures["mrr@10"] = figures.pop("mrr")
    raw = raw if raw is not None else runs
    figures["dup@5"] = sum(dup_at_k(raw.get(q, ()), 5) for q in qrels) / len(qrels)
    return figures
