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


def chunk_id(note_id: str, index: int) -> str:
    return f"{note_id}#c{index:02d}"


EMBED_MAX_CHARS = 4000   # beyond what the models read (e5: 512 tokens); a pasted base64 blob costs minutes


# Payload fields `embedding_text` reads (phase 2 reads only these from a stored chunk).
EMBED_FIELDS = ["title", "names", "aliases", "heading_path", "window", "text"]


def embedding_input(node: BaseNode) -> str:
    """What gets embedded for a chunk: its context header (`context_header`) and window (text with overlap),
    capped."""
    return embedding_text(node.metadata, node.get_content())


def known_names(meta: dict[str, Any]) -> list[str]:
    """The names the context header gives a chunk's note, each once (any case): its written name (the first of
    `names`: the frontmatter title, else the first heading) or else its name (the file name, `title`), then its
    aliases. A note is found by its other names through the resolver and mentions; the embedded text keeps the
    header it had when the written name was the note's name (adding the file name or a second heading changed
    11 of the sample vault's 88 texts and moved its figures by up to -0.007 nDCG@10, measured)."""
    written = [str(n).strip() for n in meta.get("names") or [] if str(n).strip()]
    out: list[str] = []
    for candidate in [written[0] if written else str(meta.get("title") or "").strip(),
                      *(str(a).strip() for a in meta.get("aliases") or [])]:
        if candidate and candidate.casefold() not in {n.casefold() for n in out}:
            out.append(candidate)
    return out


def heading_trail(meta: dict[str, Any]) -> str:
    """The headings above the chunk joined by " > ", without a top heading that only repeats the header's name,
    and without the chunk's own heading when its text opens with it (the text shows it already)."""
    names = known_names(meta)
    headings = [str(h).strip() for h in meta.get("heading_path") or [] if str(h).strip()]
    if headings and names and headings[0].casefold() == names[0].casefold():
        headings = headings[1:]
    first = str(meta.get("text") or "").lstrip().split("\n", 1)[0].lstrip("#").strip().casefold()
    if headings and first == headings[-1].casefold():
        headings = headings[:-1]      # the chunk opens with its own heading: the text shows it already
    return " > ".join(headings)


def context_header(meta: dict[str, Any]) -> str:
    """The chunk's place in the vault, put before its text so a chunk deep in a note still says what it is
    about: the note's written name with its aliases in brackets (`known_names`: a name in the other language, an
    abbreviation), then the `heading_trail`. A note without a title, heading or aliases (e.g. a BEIR document
    whose title is its file name) gets its name."""
    names = known_names(meta)
    lines = [f"{names[0]} ({', '.join(names[1:])})" if len(names) > 1 else (names[0] if names else ""),
             heading_trail(meta)]
    return "\n".join(line for line in lines if line)


def embedding_text(meta: dict[str, Any], content: str = "") -> str:
    """`embedding_input` from a chunk's metadata (or its stored payload, which holds the same keys)."""
    body = meta.get("window") or meta.get("text") or content
    return f"{context_header(meta)}\n\n{body}".strip()[:EMBED_MAX_CHARS]


def keyword_text(meta: dict[str, Any], content: str = "") -> str:
    """What the BM25 vector of a chunk is built from: LlamaIndex's text of the node ("title: <title>", a blank
    line, the chunk's text), with the note's aliases and the headings above the chunk added to the title line as
    in the embedding's `context_header`. A note's aliases are the names it is looked up by ("ADR-002", "Local
    First"), so they must match a keyword as they match by meaning. A document with only a title (BEIR) keeps
    exactly the vector it had. The overlap window stays out: a neighbour's words would count twice."""
    body = meta.get("text") or content
    return f"title: {context_header(meta)}\n\n{body}".strip()


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
