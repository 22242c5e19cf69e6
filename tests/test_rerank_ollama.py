"""rerank.enabled: the head of the hits is reranked by an LLM through Ollama; the tail stays; a failing
reranker keeps the scored order."""

from __future__ import annotations

import yaml
from helpers_vault import write_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.settings import REPO_ROOT

NOTES = {f"n{i}.md": f"# Note {i}\n\nqdrant vector notes number {i}" for i in range(1, 6)}


def _rerank_config(tmp_path, limit: int) -> str:
    data = yaml.safe_load((REPO_ROOT / "config" / "retriever.yaml").read_text())
    data["rerank"] = {"enabled": True, "limit": limit}
    path = tmp_path / "retriever.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _search(app):
    return app.retriever.search(QueryRequest(query="qdrant vector notes", mode="semantic", top_k=5))


def test_llm_reranks_the_head_and_keeps_the_tail(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", NOTES)
    make_app().ingest()
    plain = [n.node.metadata["title"] for n in _search(make_app()).nodes]
    app = make_app(retriever_config=_rerank_config(tmp_path, limit=3))
    fake_ollama.chat_fn = lambda messages: "Doc: 3, Relevance: 9\nDoc: 1, Relevance: 4\nDoc: 2, Relevance: 1"
    result = _search(app)
    titles = [n.node.metadata["title"] for n in result.nodes]
    assert result.trace["rerank"] == {"limit": 3, "reranker": "LLMRerank"}
    assert titles[:3] == [plain[2], plain[0], plain[1]]
    assert titles[3:] == plain[3:]


def test_a_failing_reranker_keeps_the_scored_order(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", NOTES)
    make_app().ingest()
    plain = [n.node.metadata["title"] for n in _search(make_app()).nodes]
    app = make_app(retriever_config=_rerank_config(tmp_path, limit=3))
    fake_ollama.chat_mode = "error"
    result = _search(app)
    assert [n.node.metadata["title"] for n in result.nodes] == plain
    assert "failed" in result.trace["rerank"]
