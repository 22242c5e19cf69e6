"""Hostile or broken input: each bad file becomes one report line, the rest imports, nothing escapes the vault."""

from __future__ import annotations

import os
import unicodedata

import pytest
from helpers_vault import write_vault

from mindnet.vault.scan import scan_vault


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("---\ntitle: feb\ncreated: 2024-02-30\n---\nbody\n", 1, "frontmatter has an impossible value"),
        ("---\na: &a [*a]\n---\nbody\n", 2, "YAML aliases (*name) are not supported"),
        ("---\nid: \"abc#c01\"\n---\nbody\n", 2, "frontmatter id 'abc#c01' is not a plain name"),
        ("---\nid: [1, 2]\n---\nbody\n", 2, "frontmatter id [1, 2] is not a plain name"),
        ("---\nx: '" + "a" * 70_000 + "'\n---\nbody\n", 1, "frontmatter is 70005 characters long"),
    ],
)
def test_bad_frontmatter_is_one_warning_and_the_note_imports_body_only(tmp_path, types_config, text, line, message):
    write_vault(tmp_path, {"bad.md": text, "good.md": "# Good\n\nfine"})
    notes, issues = scan_vault(tmp_path, types_config)
    assert [(n.path, n.body) for n in notes] == [("bad.md", "body\n"), ("good.md", "# Good\n\nfine")]
    assert [(i.level, i.path, i.line) for i in issues] == [("warning", "bad.md", line)]
    assert message in issues[0].message


def test_a_symlink_to_a_file_outside_the_vault_is_not_read(tmp_path, types_config):
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    vault = tmp_path / "vault"
    write_vault(vault, {"good.md": "# Good\n\nfine"})
    os.symlink(secret, vault / "outside.md")
    notes, issues = scan_vault(vault, types_config)
    assert [n.path for n in notes] == ["good.md"]


def test_decomposed_unicode_is_normalised_so_links_resolve(tmp_path, types_config):
    from mindnet.indexing.edges import LinkResolver
    nfd = unicodedata.normalize("NFD", "Übersicht")
    write_vault(tmp_path, {f"{nfd}.md": f"# {nfd}\n\ntext", "a.md": "# A\n\nsee [[Übersicht]]"})
    notes, _ = scan_vault(tmp_path, types_config)
    resolver = LinkResolver(notes)
    target = next(n for n in notes if n.path != "a.md")
    assert target.path == "Übersicht.md" and target.title == "Übersicht"
    assert resolver.resolve("Übersicht") == target.note_id


def test_tags_are_case_insensitive_like_obsidian(tmp_path, types_config):
    write_vault(tmp_path, {"a.md": "---\ntags: ML, Work, '#ml'\n---\n# A\n\ntext #Python and #python"})
    notes, _ = scan_vault(tmp_path, types_config)
    assert notes[0].tags == ["ml", "work", "python"]


@pytest.mark.parametrize("tag", ["ML", "#ml", " Ml "])
def test_tag_and_type_filters_match_any_spelling(tag):
    from mindnet.retrieval.query import QueryRequest
    request = QueryRequest(query="q", filters={"tags": [tag], "types": ["Project"]})
    assert (request.filters.tags, request.filters.types) == (["ml"], ["project"])
