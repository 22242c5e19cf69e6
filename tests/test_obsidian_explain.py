"""A search over a vault read the Obsidian way explains its links: the section a link targets and a link that
only mindnet resolves (through an alias) are named in the hit's reasons (issue 22, items 2 and 3)."""

from __future__ import annotations

from helpers_vault import fake_settings, write_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.service import Mindnet

VAULT = {
    "tools/qdrant.md": "---\ntype: project\n---\n# Qdrant\n\nA vector database.\n\n## Setup\n\n"
                       "Run the container and open port 6333.\n",
    "concepts/ki.md": "---\naliases: [AI]\n---\n# Künstliche Intelligenz\n\nMachines that learn.\n",
    "guide.md": "# Guide\n\nFor the setup follow [[qdrant#Setup]]; the background is in [[AI]].\n",
}


def _reasons(nodes, path: str) -> list[str]:
    return next(n.node.metadata["explanation"]["reasons"] for n in nodes if n.node.metadata["path"] == path)


def test_a_hit_names_the_linked_section_and_the_alias_a_link_resolved_through(tmp_path, fake_ollama) -> None:
    settings = fake_settings(tmp_path, fake_ollama.url)
    write_vault(settings.vault_root, VAULT)
    app = Mindnet(settings)
    try:
        app.ingest()
        retriever = MindnetRetriever.from_settings(settings, store=app.store, embed_model=app.embed_model)
        nodes = retriever.search(QueryRequest(query="setup container port", mode="hybrid", top_k=5,
                                              expand={"depth": 1}, group="chunk")).nodes
        guide = _reasons(nodes, "guide.md")
        assert "links to the section 'Setup' of 'qdrant' (references, explicit:wikilink, confidence 1.00)" in guide
        assert "points to 'ki', resolved through the alias 'AI' (references, explicit:wikilink, " \
               "confidence 1.00)" in guide
        setup = next(n for n in nodes if n.node.metadata["chunk_id"].endswith("#c02")
                     and n.node.metadata["path"] == "tools/qdrant.md")
        assert "referenced by 'guide' (links to the section 'Setup', this passage) (references, " \
               "explicit:wikilink, confidence 1.00)" in setup.node.metadata["explanation"]["reasons"]
    finally:
        app.close()
