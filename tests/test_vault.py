"""Reading a vault: which files, note identity, title, type, aliases, tags; bad input as report lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_vault import write_vault

from mindnet.errors import VaultError
from mindnet.settings import TypesConfig
from mindnet.vault.frontmatter import as_string_list
from mindnet.vault.note import parse_note, path_note_id
from mindnet.vault.scan import iter_markdown_files, scan_vault


def note(text: str, types: TypesConfig, path: str = "a.md"):
    return parse_note(text.encode("utf-8"), path, types)


def test_scan_reads_markdown_below_root_and_skips_hidden_and_excluded(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            "top.md": "x",
            "sub/deep/inner.md": "x",
            "UPPER.MD": "x",
            "notes.txt": "x",
            ".obsidian/workspace.md": "x",
            ".trash/old.md": "x",
            "sub/.hidden.md": "x",
            "templates/daily.md": "x",
            "_attachments/a.md": "x",
        },
    )
    found = [
        p.relative_to(tmp_path).as_posix()
        for p in iter_markdown_files(tmp_path, ["templates/**", "_attachments/**"])
    ]
    assert found == ["UPPER.MD", "top.md", "sub/deep/inner.md"]


@pytest.mark.parametrize(
    ("text", "path", "names"),
    [
        ("---\ntitle: From Frontmatter\n---\n# From Heading\n", "file-name.md", ["From Frontmatter", "From Heading"]),
        ("# From Heading\n\nbody", "file-name.md", ["From Heading"]),
        ("intro\n\n## Second level only\n", "dir/file-name.md", []),
        ("---\ntitle: ''\n---\n# From Heading ##\n", "file-name.md", ["From Heading"]),
        ("---\ntitle: file-name\n---\n# File-Name\n", "file-name.md", ["File-Name"]),   # written otherwise: kept
        ("```\n# a shell comment\n```\n$$\n# math\n$$\n# {{title}}\n# Real\n", "file-name.md", ["Real"]),
        ("---\ntitle: \"Entscheidung: {{title}}\"\n---\nbody", "file-name.md", []),
    ],
)
def test_the_name_is_the_file_name_and_title_and_first_h1_are_extra_names(types_config, text, path, names) -> None:
    parsed = note(text, types_config, path)
    assert (parsed.title, parsed.names) == ("file-name", names)


def test_note_id_comes_from_frontmatter_id(types_config) -> None:
    assert note("---\nid: my-id\n---\nbody", types_config).note_id == "my-id"


def test_note_id_without_frontmatter_id_is_uuid5_of_the_relative_path(types_config) -> None:
    first = note("body", types_config, "dir/x.md")
    assert first.note_id == path_note_id("dir/x.md") == "c723a1e4-3eaa-57fc-9452-755ea0a41fc3"
    assert note("other body", types_config, "dir/x.md").note_id == first.note_id
    assert note("body", types_config, "dir/y.md").note_id != first.note_id


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        ("a, b ,c", ["a", "b", "c"]),
        ("single", ["single"]),
        (["a", None, "", "a"], ["a"]),
        (None, []),
    ],
)
def test_frontmatter_lists_accept_list_and_comma_forms(value, expected) -> None:
    assert as_string_list(value) == expected


def test_aliases_come_from_frontmatter_list_or_comma_string(types_config) -> None:
    assert note("---\naliases: [One, Two]\n---\nx", types_config).aliases == ["One", "Two"]
    assert note("---\naliases: One, Two\n---\nx", types_config).aliases == ["One", "Two"]


def test_tags_join_frontmatter_and_inline_tags_but_not_headings_code_or_numbers(types_config) -> None:
    text = (
        "---\ntags: [alpha, '#beta']\n---\n# Heading\n\nText #gamma and #alpha, issue #123, "
        "#2025plan.\n\n```\n#not-a-tag\n```\n`#inline-code` and ## not\n"
    )
    assert note(text, types_config).tags == ["alpha", "beta", "gamma", "2025plan"]


@pytest.mark.parametrize(
    ("text", "path", "expected_type"),
    [
        ("---\ntype: project\n---\nx", "concepts/x.md", "project"),  # frontmatter beats the path rule
        ("---\ntype: Projekt\n---\nx", "x.md", "project"),  # a type alias, any case
        ("x", "people/anna.md", "person"),  # path rule
        ("x", "People/Anna.md", "person"),  # path rule, case-insensitive
        ("x", "misc/x.md", "concept"),  # default
    ],
)
def test_type_is_frontmatter_then_path_rule_then_default(types_config, text, path, expected_type) -> None:
    parsed = note(text, types_config, path)
    assert (parsed.type, parsed.warnings) == (expected_type, [])


def test_unknown_type_falls_back_to_default_with_a_warning(types_config) -> None:
    parsed = note("---\ntype: recipe\n---\nx", types_config, "people/x.md")
    assert parsed.type == "concept"
    assert parsed.warnings == [
        "unknown type 'recipe' in frontmatter; using 'concept' "
        "(known: concept, decision, experience, index, person, "
        "project, source, task, value; add it to types.yaml or fix the spelling)"
    ]


@pytest.mark.parametrize(
    ("raw", "line", "what", "body"),
    [
        (b"---\ntitle: ok\nbad: [unclosed\n---\nbody", 3, "frontmatter is not valid YAML", "body"),
        (b"---\ntitle: x\nbody without a closing fence", 1, "frontmatter opened with '---' but never closed",
         "---\ntitle: x\nbody without a closing fence"),
        (b"---\n- a\n- b\n---\nbody", 2, "frontmatter must be a mapping of keys, got list", "body"),
        (b"---\na: " + b"[" * 3000 + b"\n---\nbody", 1, "frontmatter is nested too deeply", "body"),
    ],
)
def test_a_note_whose_frontmatter_does_not_parse_is_read_body_only_with_the_reason(
        types_config, raw, line, what, body) -> None:
    parsed = parse_note(raw, "dir/bad.md", types_config)
    assert (parsed.frontmatter, parsed.body, parsed.note_id, parsed.title) == (
        {}, body, path_note_id("dir/bad.md"), "bad")
    error = parsed.frontmatter_error
    assert (error.path, error.line) == ("dir/bad.md", line)
    assert str(error).startswith(f"dir/bad.md:{line}: {what}")
    assert "; the note was imported without its frontmatter (fix: " in str(error)


@pytest.mark.parametrize(
    ("raw", "line", "what"),
    [
        (b"line one\nline two \xff\xfe broken", 2, "not valid UTF-8 (byte 0xff at offset 18)"),
    ],
)
def test_unreadable_note_raises_error_with_file_line_and_fix(types_config, raw, line, what) -> None:
    with pytest.raises(VaultError) as info:
        parse_note(raw, "dir/bad.md", types_config)
    assert (info.value.path, info.value.line) == ("dir/bad.md", line)
    assert str(info.value).startswith(f"dir/bad.md:{line}: {what}")
    assert "(fix: " in str(info.value)


@pytest.mark.parametrize("raw", [b"", b"  \n\n ", b"\xef\xbb\xbf"])
def test_an_empty_file_is_a_note_without_text(types_config, raw) -> None:
    parsed = parse_note(raw, "dir/Empty.md", types_config)
    assert (parsed.title, parsed.body.strip(), parsed.frontmatter, parsed.warnings) == ("Empty", "", {}, [])


BAD_FILES: dict[str, str | bytes] = {
    "good.md": "# Good\n\nfine",
    "yaml.md": "---\ntitle: [broken\n---\nbody",
    "latin1.md": "# Caf\xe9\n".encode("latin-1"),
    "empty.md": "",
    "huge.md": "word " * 1_000_000,  # 5 MB, over max_file_bytes (2 MB)
    "first.md": "---\nid: same\n---\nfirst",
    "second.md": "---\nid: same\n---\nsecond",
}


def test_bad_files_each_get_one_report_line_and_the_rest_imports(tmp_path: Path, types_config) -> None:
    notes, issues = scan_vault(write_vault(tmp_path, BAD_FILES), types_config)
    assert [n.path for n in notes] == ["empty.md", "first.md", "good.md", "yaml.md"]
    assert [str(i) for i in issues] == [
        "error: huge.md: file is 5.0 MB, over the 2.0 MB limit (fix: split the note or raise max_file_bytes "
        "in types.yaml)",
        "error: latin1.md:1: not valid UTF-8 (byte 0xe9 at offset 5) (fix: re-save the file as UTF-8)",
        "error: second.md:1: duplicate id 'same' (already used by first.md); this file was skipped "
        "(fix: give one of them another 'id' in its frontmatter)",
        "warning: yaml.md:2: frontmatter is not valid YAML: expected ',' or ']', but got '<stream end>'; the "
        "note was imported without its frontmatter (fix: check quotes and indentation of that line)",
    ]


def test_missing_vault_folder_is_a_vault_error(tmp_path: Path, types_config) -> None:
    with pytest.raises(VaultError, match="vault folder does not exist"):
        scan_vault(tmp_path / "nope", types_config)
