"""BM25 reads a note's names: an alias matches a keyword query through the real import, as the embedding reads
it (`keyword_text`)."""

from __future__ import annotations

from pathlib import Path

from helpers_vault import fake_settings, write_vault

from mindnet.retrieval.query import ExpandRequest, QueryRequest
from mindnet.service import Mindnet

VAULT = {
    # the alias appears nowhere in the note's text
    "decisions/local-models.md": "---\ntitle: Local models\naliases: [ADR-007]\n---\n# Local models\n\n"
                                 "We run the language model on the laptop.\n",
    "journal/review.md": "---\ntitle: Review\n---\n# Review\n\nLooked at the decision records again today.\n",
    "concepts/adr.md": "---\ntitle: Architecture decision records\n---\n# ADR\n\nShort records of decisions.\n",
}


def _search(app: Mindnet, text: str) -> list[tuple[str, float]]:
    result = app.retriever.search(QueryRequest(query=text, mode="hybrid", expand=ExpandRequest(depth=0)))
    return [(n.node.metadata["path"], n.node.metadata["score_breakdown"]["lexical"]) for n in result.nodes]


def test_an_alias_matches_its_keywords(tmp_path: Path, fake_ollama) -> None:
    fake_ollama.embed_fn = lambda text: [1.0] + [0.0] * 63     # every text alike: only BM25 tells notes apart
    write_vault(tmp_path / "vault", VAULT)
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    try:
        app.ingest()
        hits = dict(_search(app, "ADR-007"))
        # "adr" and "007" both match only the alias; the note about ADRs matches "adr" alone
        assert max(hits, key=hits.__getitem__) == "decisions/local-models.md"
        assert hits["decisions/local-models.md"] == 1.0
        assert 0.0 < hits["concepts/adr.md"] < 1.0
        assert hits["journal/review.md"] == 0.0
    finally:
        app.close()
