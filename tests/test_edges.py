"""Edges: link syntax, resolution, type defaults, structure, unlinked mentions."""

from __future__ import annotations

import pytest

from mindnet.indexing.edges import LinkResolver, derive_edges
from mindnet.indexing.mentions import MentionIndex
from mindnet.indexing.node_parser import MarkdownNoteParser
from mindnet.settings import MentionSettings, TypesConfig
from mindnet.store.collections import edge_as
from mindnet.vault.links import extract_links
from mindnet.vault.note import Note, parse_note


def make_note(text: str, path: str, types: TypesConfig) -> Note:
    return parse_note(text.encode("utf-8"), path, types)


def refs(text: str) -> list[tuple[str, str, str, str | None]]:
    return [(r.target, r.kind, r.rule_id, r.heading) for r in extract_links(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [[Note]]", [("Note", "references", "explicit:wikilink", None)]),
        ("see [[Note|shown text]]", [("Note", "references", "explicit:wikilink", None)]),
        ("see [[Note#Heading]]", [("Note", "references", "explicit:wikilink", "Heading")]),
        ("see [[Note#Heading|shown]]", [("Note", "references", "explicit:wikilink", "Heading")]),
        ("![[Note]]", [("Note", "references", "explicit:embed", None)]),
        ("[[#Only a heading]]", [("", "references", "explicit:wikilink", "Only a heading")]),
        (
            "[[rel:depends_on A]] and [[rel:Blocks B|b]] then [[rel:part_of C#H]]",
            [
                ("A", "depends_on", "inline:rel", None),
                ("B", "blocks", "inline:rel", None),
                ("C", "part_of", "inline:rel", "H"),
            ],
        ),
        (
            "> [!edge] depends_on: [[A]] [[B]] [[C]] [[D]]",
            [(t, "depends_on", "callout:edge", None) for t in "ABCD"],
        ),
        (
            "> [!edge] depends_on: [[A]]\n> [[B]]\n> related_to: [[C]]\nafter [[D]]",
            [
                ("A", "depends_on", "callout:edge", None),
                ("B", "depends_on", "callout:edge", None),
                ("C", "related_to", "callout:edge", None),
                ("D", "references", "explicit:wikilink", None),
            ],
        ),
        (
            "`[[inline code]]`\n```\n[[fenced]]\n```\n~~~\n[[tilde]]\n~~~\n[[after]]",
            [("after", "references", "explicit:wikilink", None)],
        ),
    ],
)
def test_extract_links_reads_every_link_syntax(text: str, expected) -> None:
    assert refs(text) == expected


@pytest.fixture
def vault_notes(types_config) -> list[Note]:
    return [
        make_note(
            "---\nid: pg\ntitle: PageRank\naliases: [PR Algorithmus]\n---\ntext",
            "concepts/pagerank.md",
            types_config,
        ),
        make_note("---\nid: ppr\ntitle: Personalized PageRank\n---\ntext", "concepts/ppr.md", types_config),
        make_note("---\nid: anna\n---\n# Anna Beispiel\n\ntext", "people/anna-b.md", types_config),
        make_note("---\nid: ai\ntitle: AI\n---\ntext", "concepts/ai.md", types_config),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PageRank", "pg"),  # title
        ("pagerank", "pg"),  # any case
        ("pr algorithmus", "pg"),  # alias
        ("anna-b", "anna"),  # file name
        ("people/anna-b", "anna"),  # path without .md
        ("People/Anna-B.md", "anna"),  # path with .md, any case
        ("Anna Beispiel", "anna"),  # H1 title
        ("anna", "anna"),  # the id itself
        ("Nobody", None),
    ],
)
def test_resolver_finds_notes_by_title_alias_file_name_or_path(vault_notes, text: str, expected) -> None:
    assert LinkResolver(vault_notes).resolve(text) == expected


def edges_of(note: Note, notes: list[Note], types: TypesConfig, mentions: MentionIndex | None = None):
    nodes = MarkdownNoteParser.from_config(types).note_to_nodes(note)
    return derive_edges(note, nodes, LinkResolver(notes), types, mentions)


def rows(edges) -> list[tuple]:
    return sorted((e.source_id, e.target_id, e.kind, e.rule_id, e.confidence, e.resolved) for e in edges)


def test_explicit_link_carries_type_default_kinds_on_one_edge(vault_notes, types_config) -> None:
    task = make_note("---\nid: t\n---\nneeds [[PageRank]]", "tasks/t.md", types_config)  # task: depends_on
    edges = edges_of(task, vault_notes, types_config)
    assert rows(edges) == [
        ("t#c01", "pg", "references", "explicit:wikilink", 1.0, True),
        ("t#c01", "t", "belongs_to", "structure:belongs_to", 1.0, True),
    ]
    link = next(e.payload() for e in edges if e.kind == "references")
    assert link["kinds"] == ["references", "depends_on"]
    assert (link["default_rule"], link["default_confidence"]) == ("edge_defaults:task", 0.7)
    # read as the default kind, the edge is what the separate default edge used to be
    assert edge_as(link, {"depends_on"}) | {} == {**link, "kind": "depends_on", "rule_id": "edge_defaults:task",
                                                   "confidence": 0.7}
    assert edge_as(link, {"references", "depends_on"}) is link
    assert edge_as(link, {"mentions"}) is None
    belongs = next(e.payload() for e in edges if e.kind == "belongs_to")
    assert belongs["kinds"] == ["belongs_to"] and "default_rule" not in belongs


def test_an_explicit_relation_of_the_default_kind_keeps_its_own_edge(vault_notes, types_config) -> None:
    note = make_note("---\nid: t\n---\nneeds [[PageRank]] and [[rel:depends_on PageRank]]", "tasks/t.md",
                     types_config)
    edges = [e.payload() for e in edges_of(note, vault_notes, types_config) if e.kind != "belongs_to"]
    assert sorted((e["kind"], e["kinds"]) for e in edges) == [("depends_on", ["depends_on"]),
                                                               ("references", ["references"])]


def test_a_link_written_twice_is_one_edge_with_its_default_kind(vault_notes, types_config) -> None:
    note = make_note("---\nid: c\n---\n[[PageRank]] and [[PageRank|PR]] again", "concepts/c.md", types_config)
    edges = [e.payload() for e in edges_of(note, vault_notes, types_config) if e.kind != "belongs_to"]
    assert [(e["kind"], e["kinds"]) for e in edges] == [("references", ["references", "related_to"])]


def test_typed_links_get_rule_confidences_and_no_type_defaults(vault_notes, types_config) -> None:
    note = make_note(
        "---\nid: c\n---\n[[rel:blocks PageRank]]\n\n> [!edge] supports: [[AI]]", "c.md", types_config
    )
    assert rows(e for e in edges_of(note, vault_notes, types_config) if e.kind != "belongs_to") == [
        ("c#c01", "ai", "supports", "callout:edge", 0.9, True),
        ("c#c01", "pg", "blocks", "inline:rel", 0.95, True),
    ]


def test_structural_edges_chain_chunks_and_tie_them_to_their_note(vault_notes, types_config) -> None:
    body = "\n\n".join(f"## S{n}\n\n" + " ".join(f"w{n}x{i}" for i in range(100)) for n in range(3))
    note = make_note(f"---\nid: s\n---\n{body}", "people/s.md", types_config)  # short profile: 3 chunks
    assert rows(edges_of(note, vault_notes, types_config)) == [
        ("s#c01", "s", "belongs_to", "structure:belongs_to", 1.0, True),
        ("s#c01", "s#c02", "next", "structure:order", 1.0, True),
        ("s#c02", "s", "belongs_to", "structure:belongs_to", 1.0, True),
        ("s#c02", "s#c01", "prev", "structure:order", 1.0, True),
        ("s#c02", "s#c03", "next", "structure:order", 1.0, True),
        ("s#c03", "s", "belongs_to", "structure:belongs_to", 1.0, True),
        ("s#c03", "s#c02", "prev", "structure:order", 1.0, True),
    ]


def test_unresolved_link_keeps_its_text_and_targets_its_normalised_name(vault_notes, types_config) -> None:
    note = make_note("---\nid: u\n---\nsee [[Zettelkasten Methode]]", "sources/u.md", types_config)
    (edge,) = [e for e in edges_of(note, vault_notes, types_config) if e.kind == "references"]
    assert (edge.target_id, edge.target_text, edge.resolved, edge.resolved_by) == (
        "zettelkasten methode",
        "Zettelkasten Methode",
        False,
        "unresolved",
    )


def test_link_to_itself_adds_no_edge(vault_notes, types_config) -> None:
    note = make_note(
        "---\nid: pg\ntitle: PageRank\n---\nsee [[PageRank]]", "concepts/pagerank.md", types_config
    )
    assert [e.kind for e in edges_of(note, vault_notes, types_config)] == ["belongs_to"]


def mentions_in(text: str, notes: list[Note], **settings: object) -> list[tuple[str, str]]:
    return MentionIndex(notes, MentionSettings(**settings)).find(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Wir nutzen pagerank hier.", [("pg", "pagerank")]),  # whole word, any case
        ("PageRanking ist kein Treffer", []),  # not inside a word
        ("Personalized PageRank hilft", [("ppr", "personalized pagerank")]),  # longest match wins
        (
            "Erst PageRank, dann Personalized PageRank.",
            [("ppr", "personalized pagerank"), ("pg", "pagerank")],
        ),
        ("[[PageRank]] ist verlinkt", []),  # not inside a link
        ("`PageRank` im Code\n```\nPageRank\n```", []),  # not inside code
        ("Der PR Algorithmus", [("pg", "pr algorithmus")]),  # alias
        ("AI ist zu kurz", []),  # below min_title_length
    ],
)
def test_unlinked_mentions(vault_notes, text: str, expected) -> None:
    assert mentions_in(text, vault_notes) == expected


def test_min_title_length_is_configurable(vault_notes) -> None:
    assert mentions_in("AI ist kurz", vault_notes, min_title_length=2) == [("ai", "ai")]


def test_mentions_are_capped_per_chunk(vault_notes) -> None:
    assert mentions_in("PageRank und Anna Beispiel", vault_notes, max_per_chunk=1) == [
        ("anna", "anna beispiel")
    ]


def test_mention_edges_skip_linked_targets_and_the_note_itself(vault_notes, types_config) -> None:
    note = make_note(
        "---\nid: x\ntitle: Anna Beispiel Zwei\n---\nAnna Beispiel nutzt PageRank, siehe [[PageRank]]. "
        "Anna Beispiel Zwei",
        "x.md",
        types_config,
    )
    mentions = MentionIndex([*vault_notes, note], types_config.mentions)
    found = [
        (e.target_id, e.rule_id, e.confidence)
        for e in edges_of(note, vault_notes, types_config, mentions)
        if e.kind == "mentions"
    ]
    assert found == [("anna", "mention:title", 0.4)]


def test_mentions_switched_off_in_config_give_no_mention_edges(tmp_path, fake_ollama, make_app) -> None:
    from helpers_vault import write_types, write_vault

    write_vault(tmp_path / "vault", {"a.md": "# PageRank\n\ntext", "b.md": "# Other\n\nuses PageRank a lot"})
    on = make_app().ingest()
    off = make_app(types_config=write_types(tmp_path / "types.yaml", **{"mentions.enabled": False})).ingest()
    assert (on.edges_by_kind["mentions"], off.edges_by_kind["mentions"]) == (1, 0)
