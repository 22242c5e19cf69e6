"""Library ergonomics: each public part constructs in one line and says what it is for."""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path

import pytest
from fake_ollama import FakeOllama
from llama_index.core import Document
from llama_index.embeddings.ollama import OllamaEmbedding

import mindnet
from mindnet import MarkdownNoteParser, MindnetRetriever, MindnetScorer, read_vault
from mindnet.errors import ConfigError, VaultError
from mindnet.service import Mindnet
from mindnet.settings import DEFAULT_CONFIG_DIR, SAMPLE_VAULT, Settings, shipped_retriever

NOTE = "---\ntitle: Plan\n---\n# Plan\n\n" + " ".join(f"w{i}" for i in range(60)) + "\n"


def test_every_public_name_has_its_own_docstring() -> None:
    missing = []
    for name in mindnet.__all__:
        obj = getattr(mindnet, name)
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        if not doc or len(doc.split()) < 8 or doc.startswith(f"{name}("):   # dataclass signatures don't count
            missing.append(name)
    assert missing == []


# ------------------------------------------------------------------------------------------- parser


def test_parser_without_arguments_uses_the_shipped_types() -> None:
    nodes = MarkdownNoteParser().get_nodes_from_documents([Document(text=NOTE, metadata={"path": "projects/p.md"})])
    assert [(n.metadata["type"], n.metadata["chunk_profile"], n.metadata["title"], n.metadata["names"])
            for n in nodes] == [("project", "by_heading", "p", ["Plan"])]


def test_parser_from_types_yaml_reads_your_types(tmp_path: Path) -> None:
    text = (DEFAULT_CONFIG_DIR / "types.yaml").read_text(encoding="utf-8")
    mine = tmp_path / "types.yaml"
    mine.write_text(text.replace('paths: ["projects/**", "projekte/**"]', 'paths: ["work/**"]'), encoding="utf-8")
    parser = MarkdownNoteParser.from_types_yaml(mine)
    nodes = parser.get_nodes_from_documents([Document(text=NOTE, metadata={"path": "work/p.md"})])
    assert nodes[0].metadata["type"] == "project"


def test_parser_from_a_bad_types_yaml_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "types.yaml"
    bad.write_text("default_type: concept\nchunk_profiles: {}\ntypes: {concept: {colour: red}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"types.yaml: unknown key 'types.concept.colour'"):
        MarkdownNoteParser.from_types_yaml(bad)


def test_parser_skips_a_bad_note_and_keeps_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    docs = [Document(text="", metadata={"path": "empty.md"}),
            Document(text="---\ntitle: [oops\n---\nx", metadata={"path": "bad.md"}),
            Document(text=NOTE, metadata={"path": "good.md"})]
    with caplog.at_level(logging.WARNING):
        nodes = MarkdownNoteParser().get_nodes_from_documents(docs)
    # an empty note has no chunks (it is a note links resolve to, without text); broken frontmatter is dropped
    # and the body kept, as the import does
    assert ([n.metadata["path"] for n in nodes], nodes[0].text) == (["bad.md"] + ["good.md"] * (len(nodes) - 1), "x")
    assert "empty.md" not in caplog.text and "bad.md:2" in caplog.text


def test_parser_can_raise_on_a_bad_note() -> None:
    with pytest.raises(VaultError, match="bad.md"):
        MarkdownNoteParser(raise_on_error=True).get_nodes_from_documents(
            [Document(text="---\ntitle: [oops\n---\nx", metadata={"path": "bad.md"})])


def test_read_vault_gives_one_document_per_note_with_its_vault_path() -> None:
    docs = read_vault(SAMPLE_VAULT)
    paths = [d.metadata["path"] for d in docs]
    assert "decisions/qdrant-statt-chroma.md" in paths
    assert not [p for p in paths if p.startswith((".obsidian", ".trash", "templates/"))]
    assert [d.doc_id for d in docs] == paths


def test_read_vault_skips_files_that_are_not_utf8(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "good.md").write_text(NOTE, encoding="utf-8")
    (tmp_path / "latin.md").write_bytes("Grüße".encode("latin-1"))
    with caplog.at_level(logging.WARNING):
        assert [d.metadata["path"] for d in read_vault(tmp_path)] == ["good.md"]
    assert "latin.md: not valid UTF-8" in caplog.text


def test_read_vault_of_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="not a folder"):
        read_vault(tmp_path / "nowhere")


# ------------------------------------------------------------------------------------------- scorer


def test_scorer_without_arguments_uses_the_shipped_weights() -> None:
    scorer = MindnetScorer()
    assert scorer.weights == shipped_retriever().scoring
    assert scorer.edge_types == shipped_retriever().expand.edge_types
    assert (scorer.weights.edge_weight, scorer.weights.centrality_weight) == (0.3, 0.2)


# ------------------------------------------------------------------------------------------- retriever


@pytest.fixture
def imported(tmp_path: Path, fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample vault imported with the fake Ollama's embeddings into tmp_path/data/qdrant (cwd tmp_path)."""
    for name in [k for k in os.environ if k.startswith("MINDNET_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINDNET_EMBEDDING", "ollama")
    monkeypatch.setenv("MINDNET_OLLAMA_URL", fake_ollama.url)
    app = Mindnet(Settings.from_env())
    try:
        app.ingest(SAMPLE_VAULT)
    finally:
        app.close()
    return tmp_path / "data" / "qdrant"


def _titles(nodes) -> list[str]:
    return [n.node.metadata["title"] for n in nodes]


def test_retriever_from_env_searches_the_imported_index(imported: Path) -> None:
    expected = Mindnet.from_env()
    try:
        want = _titles(expected.retriever.retrieve("Qdrant statt Chroma"))
    finally:
        expected.close()
    retriever = MindnetRetriever.from_env()
    try:
        got = retriever.retrieve("Qdrant statt Chroma")
    finally:
        retriever.close()
    assert _titles(got) == want and want[0] == "qdrant-statt-chroma"      # the note's name: its file name
    assert got[0].node.metadata["explanation"]["reasons"]


def test_retriever_open_takes_a_folder_and_an_embedding_model(imported: Path, fake_ollama: FakeOllama,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINDNET_EMBEDDING")   # the embedding comes from the argument only
    embed = OllamaEmbedding(model_name="nomic-embed-text", base_url=fake_ollama.url)
    retriever = MindnetRetriever.open(str(imported), embedding=embed)
    try:
        hits = retriever.retrieve("Qdrant statt Chroma")
    finally:
        retriever.close()
    assert (hits[0].node.metadata["title"], hits[0].node.metadata["names"]) == (
        "qdrant-statt-chroma", ["Entscheidung: Qdrant statt Chroma"])


def test_retriever_open_takes_a_backend_name(imported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINDNET_EMBEDDING")
    retriever = MindnetRetriever.open(imported, embedding="ollama")
    try:
        assert type(retriever.embed_model).__name__ == "OllamaEmbedding"
        top = retriever.retrieve("Qdrant statt Chroma")[0]
        assert top.node.metadata["title"] == "qdrant-statt-chroma"
    finally:
        retriever.close()


def test_retriever_open_releases_the_folder_on_close(imported: Path) -> None:
    MindnetRetriever.open(imported).close()
    MindnetRetriever.open(imported).close()   # a second open in the same process works after close


def test_retriever_open_of_an_unknown_backend_names_it_and_keeps_the_folder_free(imported: Path) -> None:
    with pytest.raises(ConfigError, match="MINDNET_EMBEDDING='word2vec' is not a known backend"):
        MindnetRetriever.open(imported, embedding="word2vec")
    MindnetRetriever.open(imported).close()   # not left locked by the failed call
