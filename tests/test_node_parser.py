"""`MarkdownNoteParser` as a LlamaIndex NodeParser: node ids, payload, relationships, standalone use."""

from __future__ import annotations

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import MetadataMode, NodeRelationship
from llama_index.embeddings.ollama import OllamaEmbedding

from mindnet.indexing.node_parser import MarkdownNoteParser, chunk_id, embedding_input

PERSON = (
    "---\nid: anna\ntitle: Anna Beispiel\naliases: [Anna B]\ntags: [team]\n---\n# Anna\n\n"
    + " ".join(f"alpha{i}" for i in range(100))
    + "\n\n## Kontakt\n\n"
    + " ".join(f"beta{i}" for i in range(100))
    + " #berlin\n"
)


@pytest.fixture
def parser(types_config) -> MarkdownNoteParser:
    return MarkdownNoteParser.from_config(types_config)


@pytest.fixture
def nodes(parser):
    return parser.get_nodes_from_documents([Document(text=PERSON, metadata={"path": "people/anna.md"})])


@pytest.mark.parametrize(
    ("note_id", "index", "expected"), [("n", 1, "n#c01"), ("n", 12, "n#c12"), ("n", 123, "n#c123")]
)
def test_chunk_id_is_note_id_hash_c_and_two_digit_index(note_id: str, index: int, expected: str) -> None:
    assert chunk_id(note_id, index) == expected


def test_nodes_get_chunk_ids_and_ord_in_order(nodes) -> None:
    assert [(n.node_id, n.metadata["ord"]) for n in nodes] == [("anna#c01", 1), ("anna#c02", 2)]


def test_node_payload_carries_note_and_type_settings(nodes) -> None:
    meta = nodes[1].metadata
    assert {
        k: meta[k]
        for k in (
            "chunk_id",
            "note_id",
            "title",
            "names",
            "path",
            "type",
            "retriever_weight",
            "chunk_profile",
            "tags",
            "aliases",
            "heading_path",
            "neighbors_prev",
            "neighbors_next",
            "line",
        )
    } == {
        "chunk_id": "anna#c02",
        "note_id": "anna",
        "title": "anna",                       # the file name
        "names": ["Anna Beispiel", "Anna"],    # the frontmatter title and the first heading
        "path": "people/anna.md",
        "type": "person",
        "retriever_weight": 1.0,
        "chunk_profile": "short",
        "tags": ["team", "berlin"],
        "aliases": ["Anna B"],
        "heading_path": ["Anna", "Kontakt"],
        "neighbors_prev": ["anna#c01"],
        "neighbors_next": [],
        "line": 11,
    }


def test_node_text_has_no_overlap_and_window_has_the_overlap(nodes) -> None:
    second = nodes[1]
    text = "## Kontakt\n\n" + " ".join(f"beta{i}" for i in range(100)) + " #berlin"
    overlap = " ".join(f"alpha{i}" for i in range(85, 100))  # short profile: 15 words
    assert (second.text, second.metadata["text"]) == (text, text)
    assert second.metadata["window"] == f"{overlap}\n\n{text}"
    # context header: the note's written name (its frontmatter title) with its aliases, then the headings above
    # the chunk ("Kontakt" opens the chunk's text, so the trail stops above it); then the window
    assert embedding_input(second) == f"Anna Beispiel (Anna B)\nAnna\n\n{overlap}\n\n{text}"


def test_context_header_names_the_note_by_its_written_name_and_aliases() -> None:
    from mindnet.indexing.node_parser import context_header
    # the frontmatter title (else the first heading) leads; the file name is the note's name, but the embedded
    # text stays what it was when the written name was the note's name
    assert context_header({"title": "lena-hoffmann", "names": ["Lena Hoffmann"], "text": "x"}) == "Lena Hoffmann"
    assert context_header({"title": "2025-04-02 Qdrant Benchmark", "names": ["Qdrant Benchmark"],
                           "heading_path": ["Qdrant Benchmark", "Setup"], "text": "x"}) == "Qdrant Benchmark\nSetup"
    assert context_header({"title": "k", "names": ["Entscheidung: Kein Wettkampf", "Kein Wettkampf"],
                           "aliases": ["no competition"], "heading_path": ["Kein Wettkampf", "Gründe"],
                           "text": "x"}) == "Entscheidung: Kein Wettkampf (no competition)\nKein Wettkampf > Gründe"
    assert context_header({"title": "ollama", "names": [], "aliases": [], "text": "x"}) == "ollama"


def test_context_header_names_the_note_and_the_section_without_repeating_the_title() -> None:
    from mindnet.indexing.node_parser import context_header, embedding_text
    meta = {"title": "Embeddings", "aliases": ["embeddings", "Einbettungen", " ", "text embeddings"],
            "heading_path": ["Embeddings", "Wie ich sie nutze", "Ähnlichkeit messen"], "text": "Kosinus."}
    # the alias equal to the title (any case) and the top heading repeating the title are left out
    assert context_header(meta) == "Embeddings (Einbettungen, text embeddings)\nWie ich sie nutze > Ähnlichkeit messen"
    # a document with only a title (a BEIR corpus) embeds exactly as before: title, blank line, text
    assert embedding_text({"title": "Doc", "aliases": [], "heading_path": [], "window": "w", "text": "t"}) == "Doc\n\nw"
    assert embedding_text({"title": "", "heading_path": ["A"], "text": "t"}) == "A\n\nt"
    # a chunk that opens with its own heading: the trail names only the headings above it
    assert context_header({"title": "T", "heading_path": ["T", "A", "B"], "text": "### B\n\nx"}) == "T\nA"


def test_keyword_text_holds_the_names_and_headings_but_not_the_overlap(nodes) -> None:
    from mindnet.indexing.node_parser import keyword_text
    second = nodes[1]
    # BM25 reads the note's aliases like its title (a note looked up by "Anna B" must match that keyword), and the
    # headings above the chunk; the overlap from the previous chunk stays out (its words would count twice)
    assert keyword_text(second.metadata) == f"title: Anna Beispiel (Anna B)\nAnna\n\n{second.metadata['text']}"
    assert "alpha99" not in keyword_text(second.metadata)
    # a BEIR document (title only): LlamaIndex's node text, as before
    meta = {"title": "Doc", "aliases": [], "heading_path": [], "window": "w", "text": "t"}
    assert keyword_text(meta) == "title: Doc\n\nt"


def test_nodes_link_source_previous_and_next(nodes) -> None:
    first, second = nodes
    assert first.relationships[NodeRelationship.SOURCE].node_id == second.ref_doc_id
    assert first.relationships[NodeRelationship.NEXT].node_id == "anna#c02"
    assert second.relationships[NodeRelationship.PREVIOUS].node_id == "anna#c01"
    assert NodeRelationship.PREVIOUS not in first.relationships
    assert NodeRelationship.NEXT not in second.relationships


def test_embedding_text_shows_the_title_but_no_bookkeeping_metadata(nodes) -> None:
    content = nodes[0].get_content(metadata_mode=MetadataMode.EMBED)
    assert content.split("\n\n")[0] == "title: anna\nnames: ['Anna Beispiel', 'Anna']"


def test_document_without_path_is_named_after_its_id(parser) -> None:
    (node,) = parser.get_nodes_from_documents([Document(text="# Hi\n\nthere", id_="doc-1")])
    assert (node.metadata["path"], node.metadata["title"], node.metadata["names"], node.metadata["type"]) == (
        "doc-1.md",
        "doc-1",
        ["Hi"],
        "concept",
    )


def test_parser_runs_in_a_plain_llamaindex_pipeline_into_a_vector_index(parser, fake_ollama) -> None:
    docs = [
        Document(text=PERSON, metadata={"path": "people/anna.md"}),
        Document(text="# Qdrant\n\nVektordatenbank in Rust mit Payload-Filtern.", metadata={"path": "q.md"}),
    ]
    embed = OllamaEmbedding(model_name="nomic-embed-text", base_url=fake_ollama.url)
    nodes = IngestionPipeline(transformations=[parser]).run(documents=docs)
    index = VectorStoreIndex(nodes, embed_model=embed, storage_context=StorageContext.from_defaults())
    hits = index.as_retriever(similarity_top_k=1).retrieve("Vektordatenbank Rust Payload")
    assert [h.node.node_id for h in hits] == [f"{nodes[2].metadata['note_id']}#c01"]
    assert fake_ollama.count("/api/embed") >= 1


def test_embedding_input_is_capped_for_pathological_chunks(types_config) -> None:
    from llama_index.core import Document

    from mindnet.indexing.node_parser import EMBED_MAX_CHARS, MarkdownNoteParser, embedding_input
    blob = "A" * 100_000   # a pasted base64 image: one "word", so no chunk boundary can cut it
    nodes = MarkdownNoteParser.from_config(types_config).get_nodes_from_documents(
        [Document(text=f"# Img\n\n{blob}", metadata={"path": "img.md"})])
    assert max(len(embedding_input(n)) for n in nodes) == EMBED_MAX_CHARS
