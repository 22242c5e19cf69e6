"""The depth-1 query path's shortcuts give what the longer way gave: the link sources read once per query, the
numpy-only PageRank (no scipy on the query path), graph candidates' ranking fields from the link graph."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mindnet.retrieval.graph import GraphStats, LinkGraph, Subgraph
from mindnet.retrieval.graph_arrays import pagerank


def test_sources_are_the_notes_linking_here_with_their_confidence() -> None:
    sub = Subgraph(seeds={"a": 0.9, "b": 0.5, "z": 0.0})
    for src, dst, conf in [("a", "x", 0.8), ("b", "x", 0.6), ("z", "x", 1.0), ("x", "a", 0.7)]:
        sub.graph.add_edge(src, dst, confidence=conf)
    assert sub.sources("x") == {"a": 0.8, "b": 0.6, "z": 1.0}
    assert sub.sources("a") == {"x": 0.7}
    assert sub.sources("nowhere") == {}
    assert sub.linkers("x") == ["a", "b"]      # a seed with no relevance (z) does not count


@pytest.mark.parametrize("seed", range(20))
def test_pagerank_equals_the_sparse_matrix_iteration_bit_for_bit(seed: int) -> None:
    """The numpy-only iteration adds each note's terms in the order a CSR matrix-vector product does (scipy's,
    which it replaced), so the walk shares and scores stay identical."""
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    key = np.unique(rng.integers(0, n * n, int(rng.integers(1, 600))))
    src, dst = key // n, key % n
    w = rng.random(len(src))
    pers = rng.random(n) if seed % 2 else None
    out_weight = np.bincount(src, weights=w, minlength=n)
    scale = np.divide(1.0, out_weight, out=np.zeros(n), where=out_weight != 0)
    transition = sparse.csr_array((w * scale[src], (dst, src)), shape=(n, n))
    p = np.full(n, 1.0 / n) if pers is None else pers / pers.sum()
    dangling = np.flatnonzero(out_weight == 0)
    alpha = 0.85
    x = np.full(n, 1.0 / n)
    for _ in range(200):
        last = x
        x = alpha * (transition @ last + last[dangling].sum() * p) + (1 - alpha) * p
        if np.abs(x - last).sum() < n * 1e-8:
            break
    assert np.array_equal(pagerank(n, src, dst, w, personalization=pers), x)


def test_the_walk_shares_of_a_query_import_no_scipy() -> None:
    """scipy.sparse took 0.35 s to import in the first depth-1 search of a process (30,000 notes)."""
    code = ("import sys\n"
            "from mindnet.retrieval.graph import GraphStats, Subgraph, link_flow\n"
            "sub = Subgraph(seeds={'a': 1.0}, stats=GraphStats.empty())\n"
            "sub.graph.add_edge('a', 'b', confidence=1.0)\n"
            "sub.graph.add_edge('b', 'c', confidence=0.5)\n"
            "assert link_flow(sub.graph, sub.seeds, sub.stats)['c'] > 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_graph_candidate_gets_its_note_s_ranking_fields() -> None:
    meta = {"chunks": [["n#c00", "p0"], ["n#c01", "p1"]], "type": "concept", "path": "c/n.md", "tags": ["t"],
            "retriever_weight": 1.2, "lang": "en"}
    graph = LinkGraph(index=None, stats=GraphStats.empty(), titles={"n": "N"}, notes={"n": meta})  # type: ignore[arg-type]
    assert graph.brief_payload("n", "n#c01") == {"chunk_id": "n#c01", "note_id": "n", "title": "N",
                                                 "type": "concept", "path": "c/n.md", "tags": ["t"],
                                                 "retriever_weight": 1.2, "lang": "en"}


def test_depth_one_reads_its_candidates_ranking_fields_from_the_link_graph_and_answers_the_same(
        tmp_path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> None:
    """A depth-1 search takes its candidates' ranking fields from the link graph (the searches read ids and
    scores only); the answers, scores and explanations are those of reading them from the chunks' payloads, and a
    chunk the graph does not list is read from the engine."""
    from helpers_vault import SAMPLE_QUERIES, copy_sample_vault, fake_settings

    from mindnet.retrieval.query import QueryRequest
    from mindnet.service import Mindnet
    from mindnet.store.collections import BRIEF_FIELDS

    copy_sample_vault(tmp_path / "vault")
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    try:
        app.ingest()
        queries = [q for q in SAMPLE_QUERIES if q.get("expand", {}).get("depth", 1) > 0 and q.get("mode") != "semantic"]
        queries += [{**q, "expand": {"depth": 1}} for q in SAMPLE_QUERIES if q not in queries]
        asked: list[str] = []
        real = LinkGraph.brief_of

        def counted(self: LinkGraph, point_id: str) -> dict | None:
            asked.append(point_id)
            return real(self, point_id)

        def answers() -> list:
            return [{k: v for k, v in app.query(QueryRequest(**q)).items() if k not in ("query_id", "trace")}
                    for q in queries]
        with monkeypatch.context() as m:
            m.setattr(LinkGraph, "brief_of", counted)
            by_graph = answers()
        assert asked                                    # the path taken
        with monkeypatch.context() as m:                # every chunk unknown to the graph: read from the engine
            reads: list[object] = []
            store = app.searcher.store
            retrieve = store.retrieve
            m.setattr(LinkGraph, "brief_of", lambda self, point_id: None)
            m.setattr(store, "retrieve", lambda kind, ids, **kw: reads.append(kw.get("payload")) or
                      retrieve(kind, ids, **kw))
            by_payload = answers()
        assert BRIEF_FIELDS in reads
        assert by_graph == by_payload
        graph = app.searcher._link_graph()
        some = next(iter(graph.notes.values()))["chunks"][0]
        [record] = app.searcher.store.retrieve("chunks", [some[1]], payload=BRIEF_FIELDS)
        assert graph.brief_of(some[1]) == record.payload
        assert graph.brief_of("00000000-0000-0000-0000-000000000000") is None
    finally:
        app.close()


@pytest.mark.parametrize("request_fields", [
    {"query": "Qdrant Vektordatenbank", "expand": {"depth": 1}},                     # one dense query
    {"query": "Reranker", "variants": ["Qdrant als Vektordatenbank"], "hyde": ["Ich nutze Qdrant."],
     "expand": {"depth": 1}},                                                       # three: every cosine read
    {"query": "reranker decision", "keywords": ["Chroma", "Obsidian"], "expand": {"depth": 0}},
])
def test_every_candidate_s_dense_score_is_its_best_cosine_with_the_query_vectors(
        tmp_path, fake_ollama, monkeypatch: pytest.MonkeyPatch, request_fields: dict) -> None:
    """Chunks found by keywords, by the graph or by one of several query vectors get their dense score from
    restricted dense searches (not from their vectors read back): it is the best cosine of the chunk's stored
    vector with any query vector, for every candidate the formula ranks."""
    from helpers_vault import copy_sample_vault, fake_settings

    import mindnet.retrieval.search as search_module
    from mindnet.retrieval.candidates import unit
    from mindnet.retrieval.query import QueryRequest
    from mindnet.service import Mindnet

    copy_sample_vault(tmp_path / "vault")
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    try:
        app.ingest()
        ranked: list = []
        real = search_module.score_hits
        monkeypatch.setattr(search_module, "score_hits", lambda q, cands, *a, **kw: ranked.extend(cands) or
                            real(q, cands, *a, **kw))
        request = QueryRequest(**request_fields, mode="hybrid", top_k=3)
        searcher = app.searcher
        searcher.search(request)
        vectors = np.stack([unit(searcher.embed_query(t)) for t in request.texts() + request.hyde])
        stored = {r.id: r.dense for r in searcher.store.scroll("chunks", payload=False, dense=True)}
        assert 50 < len(ranked) < len(stored)     # more than the dense search's 50, fewer than all chunks
        ways = {"graph" if c.via_graph else "keywords" if c.lexical > 0 else "dense" for c in ranked}
        assert ways >= ({"dense", "keywords", "graph"} if len(vectors) == 1 and request.expand.depth else
                        {"dense", "keywords"})
        for c in ranked:
            assert c.embedded
            assert c.dense == pytest.approx(float(np.max(vectors @ unit(stored[c.point_id]))), abs=1e-5)
    finally:
        app.close()
