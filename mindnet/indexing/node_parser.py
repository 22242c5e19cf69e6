"""`MarkdownNoteParser`: a LlamaIndex NodeParser that turns vault notes into chunk `TextNode`s.

Usable on its own in any LlamaIndex pipeline::

    parser = MarkdownNoteParser()                       # the shipped note types and chunk profiles
    parser = MarkdownNoteParser.from_types_yaml("my/types.yaml")
    nodes = parser.get_nodes_from_documents([Document(text=markdown, metadata={"path": "projects/x.md"})])

`metadata["path"]` is the note's path inside the vault: the type's path rules and the note id depend on it
(`read_vault` fills it in). A document that cannot become a note is skipped with a logged warning that names
the file and line, and one whose frontmatter does not parse is parsed without it (a logged warning, as in the
import), unless `raise_on_error` is set.

Each node's id is ``{note_id}#c{index:02d}``; its text is the chunk without overlap (for display) and
``metadata["window"]`` the overlap + text that is embedded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, NodeRelationship, RelatedNodeInfo, TextNode
from pydantic import Field

from mindnet.errors import VaultError
from mindnet.indexing.chunk_text import (  # noqa: F401 - the chunk texts, importable from here too
    EMBED_FIELDS,
    EMBED_MAX_CHARS,
    chunk_id,
    context_header,
    embedding_input,
    embedding_text,
    heading_trail,
    keyword_text,
    known_names,
)
from mindnet.indexing.chunker import chunk_body
from mindnet.indexing.sparse import text_language
from mindnet.settings import TypesConfig, load_yaml_model, shipped_types
from mindnet.vault.budget import CHECK_EVERY, checkpoint
from mindnet.vault.note import Note, parse_note

log = logging.getLogger(__name__)

# Payload keys the LLM and the embedding never see as "metadata text"; the title stays visible to both.
_HIDDEN_FROM_EMBED = ["chunk_id", "note_id", "ord", "type", "retriever_weight", "index_note", "chunk_profile",
                      "neighbors_prev", "neighbors_next", "path", "tags", "heading_path", "window", "text", "aliases",
                      "lang"]
_HIDDEN_FROM_LLM = [k for k in _HIDDEN_FROM_EMBED if k not in ("path",)]


class MarkdownNoteParser(NodeParser):
    """A LlamaIndex `NodeParser` that turns Markdown notes into chunk nodes, each note cut by its type's chunk
    profile (short, medium, long, by_heading), with title, type, tags, heading path and neighbours in metadata.

    `MarkdownNoteParser()` uses the shipped note types; `MarkdownNoteParser.from_types_yaml(path)` reads your
    own types.yaml; `MarkdownNoteParser.from_config(types_config)` takes a parsed `TypesConfig`.
    """

    types_config: TypesConfig = Field(default_factory=shipped_types,
                                      description="the parsed types.yaml (chunk profiles and note types)")
    raise_on_error: bool = Field(False, description="raise VaultError for a bad note instead of skipping it")

    @classmethod
    def from_config(cls, types_config: TypesConfig, **kwargs: Any) -> MarkdownNoteParser:
        return cls(types_config=types_config, **kwargs)

    @classmethod
    def from_types_yaml(cls, path: str | Path, **kwargs: Any) -> MarkdownNoteParser:
        """A parser for the note types in your own types.yaml (a bad file raises ConfigError naming the key)."""
        return cls(types_config=load_yaml_model(Path(path), TypesConfig), **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "MarkdownNoteParser"

    def note_to_nodes(self, note: Note, source: RelatedNodeInfo | None = None) -> list[TextNode]:
        spec = self.types_config.types[note.type]
        profile = self.types_config.chunk_profiles[spec.chunk_profile]
        pieces = chunk_body(note.body, profile)
        ids = [chunk_id(note.note_id, n + 1) for n in range(len(pieces))]
        source = source or RelatedNodeInfo(node_id=note.note_id)
        # the note's language, not the chunk's: a German note with an English quote is still read by a German
        # question's keywords (retriever: hybrid.language_fair)
        language = text_language(f"{note.title}\n{note.body}") or ""
        nodes: list[TextNode] = []
        for n, (chunk, window) in enumerate(pieces):
            checkpoint(chunk.start_line, CHECK_EVERY)
            metadata = {
                "chunk_id": ids[n], "note_id": note.note_id, "ord": n + 1, "title": note.title,
                "names": list(note.names),
                "path": note.path, "type": note.type, "retriever_weight": spec.retriever_weight,
                "index_note": note.type == self.types_config.index_type(),
                "chunk_profile": spec.chunk_profile, "tags": list(note.tags), "aliases": list(note.aliases),
                "heading_path": chunk.heading_path,
                "neighbors_prev": [ids[n - 1]] if n else [], "neighbors_next": [ids[n + 1]] if n + 1 < len(ids) else [],
                "text": chunk.text, "window": window, "line": note.body_line + chunk.start_line,
                "lang": language,
            }
            node = TextNode(id_=ids[n], text=chunk.text, metadata=metadata,
                            excluded_embed_metadata_keys=_HIDDEN_FROM_EMBED + ["line"],
                            excluded_llm_metadata_keys=_HIDDEN_FROM_LLM + ["line"])
            node.relationships[NodeRelationship.SOURCE] = source
            nodes.append(node)
        for prev, nxt in zip(nodes, nodes[1:], strict=False):
            prev.relationships[NodeRelationship.NEXT] = nxt.as_related_node_info()
            nxt.relationships[NodeRelationship.PREVIOUS] = prev.as_related_node_info()
        return nodes

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for doc in nodes:
            meta = doc.metadata or {}
            rel_path = str(meta.get("path") or meta.get("file_path") or meta.get("file_name") or f"{doc.node_id}.md")
            try:
                note = parse_note(doc.get_content().encode("utf-8"), rel_path, self.types_config)
            except VaultError as exc:
                if self.raise_on_error:
                    raise
                log.warning("skipping %s", exc)   # one bad note never stops a pipeline
                continue
            if note.frontmatter_error is not None:   # as in the import: searchable by its body, with a warning
                if self.raise_on_error:
                    raise note.frontmatter_error
                log.warning("%s", note.frontmatter_error)
            source = doc.as_related_node_info() if isinstance(doc, Document) else RelatedNodeInfo(node_id=note.note_id)
            out.extend(self.note_to_nodes(note, source=source))
        return out
