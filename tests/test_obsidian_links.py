"""Conformance with Obsidian (issue 22): each case is a tiny vault, a note `src.md` (or another source) that writes
one link, and the target the import resolves it to, written from Obsidian's documented behaviour (help.obsidian.md:
Internal links, Link to blocks, Embed files, Tags, Properties; Settings > Files and links > New link format:
"Shortest path when possible", "Relative path to file", "Absolute path in vault").

Expected targets read `<path> (<rule>)`; a link to a heading or block reads `<path>#<first line of the chunk it
targets>`; `unresolved:<normalised target>`; `attachment:<file>`; `none` (no note edge: a URL, code, a link out of
the vault). Rules `id`, `alias` and `title` are where mindnet goes further than Obsidian (which leaves such a link
unresolved); every other rule is Obsidian's own.
"""

from __future__ import annotations

import itertools
import time
import unicodedata
from pathlib import Path

import pytest
from helpers_vault import write_vault

from mindnet.indexing.planning import plan_vault
from mindnet.indexing.report import ImportReport
from mindnet.vault.frontmatter import parse_yaml_lines
from mindnet.vault.note import parse_note

LINK_RULES = ("explicit:", "inline:", "callout:", "attachment:")
# a note of sections: by_heading chunks (type project), so each heading opens its own chunk
SECTIONED = ("---\ntype: project\n---\n# Top\n\nIntro.\n\n## Install\n\nGet it.\n\n### Setup\n\nNested setup.\n\n"
             "## Setup\n\nSteps. ^blk\n\n## Step 1: Configure\n\nEdit the file.\n\n## Table\n\n| a | b |\n|---|---|\n"
             "| 1 | 2 |\n\n^tbl\n\n## Code\n\n```\n# not a heading\n```\n\n## Math\n\n$$\n# not one either\n$$\n")
_counter = itertools.count()


def resolve(tmp_path: Path, files: dict[str, str | bytes], source: str = "src.md") -> tuple[str, ImportReport]:
    """Import `files` (without Qdrant) and say where the one link of `source` goes (see the module docstring)."""
    vault = write_vault(tmp_path / f"v{next(_counter)}", files)
    report = ImportReport(vault=str(vault))
    from mindnet.settings import Settings
    planned = plan_vault(vault, Settings.from_env().types, report)
    by_id = {p.note.note_id: p for p in planned}
    src = next(p for p in planned if p.note.path == unicodedata.normalize("NFC", source))
    links = [e for e in src.edges if e.rule_id.startswith(LINK_RULES)]
    assert len(links) <= 1, [e.payload() for e in links]
    if not links:
        return "none", report
    edge = links[0]
    if edge.kind == "attachment":
        return f"attachment:{edge.target_id}", report
    if not edge.resolved:
        return f"unresolved:{edge.target_id}", report
    target = by_id[edge.target_id]
    where = "self" if edge.target_id == src.note.note_id else target.note.path
    if edge.target_chunk:
        note_id, _, chunk = edge.target_chunk.rpartition("#c")
        assert note_id == edge.target_id
        first = target.nodes[int(chunk) - 1].get_content().split("\n", 1)[0].lstrip("#").strip()
        where += f"#{first}"
    return f"{where} ({edge.resolved_by})", report


def case(link: str, files: dict[str, str], expected: str, *, source: str = "src.md", where: str = ""):
    """One conformance case: `source` holds `link` (in a sentence), next to `files`."""
    return pytest.param({**files, source: f"# Source\n\nSee {link}\n"}, source, expected,
                        id=f"{where or source}: {link} -> {expected}")


N = "# N\n\nn\n"

INTERNAL_LINKS = [
    case("[[Note]]", {"Note.md": N}, "Note.md (name)"),
    case("[[note]]", {"Note.md": N}, "Note.md (name)", where="any case"),
    case("[[NOTE.MD]]", {"Note.md": N}, "Note.md (name)", where="with .md, any case"),
    case("[[ Note ]]", {"Note.md": N}, "Note.md (name)", where="surrounding spaces"),
    case("[[Note|shown text]]", {"Note.md": N}, "Note.md (name)", where="display text"),
    case(r"| a | [[folder/Note\|shown]] |", {"folder/Note.md": N}, "folder/Note.md (path)", where="escaped pipe"),
    case("[[Note]]", {"deep/er/Note.md": N}, "deep/er/Note.md (name)", where="a file name anywhere in the vault"),
    case("[[Übung]]", {unicodedata.normalize("NFD", "Übung.md"): N}, "Übung.md (name)", where="NFD file name"),
    case("[[café]]", {"Café.md": N}, "Café.md (name)", where="non-ASCII, any case"),
    case("[[v1.2 release]]", {"v1.2 release.md": N}, "v1.2 release.md (name)", where="dots in the name"),
    case("[[Meeting]]", {"people/Meeting.md": N, "daily/2024-05-01.md": "# Meeting\n\nnotes\n"},
         "people/Meeting.md (name)", where="the file name beats a first heading"),
    case("[[Meeting]]", {"people/Meeting.md": N, "daily/2024-05-01.md": "---\ntitle: Meeting\n---\nnotes\n"},
         "people/Meeting.md (name)", where="the file name beats a frontmatter title"),
    case("[[Note#]]", {"Note.md": N}, "Note.md (name)", where="an empty anchor"),
    case("[[Nobody]]", {"Note.md": N}, "unresolved:nobody", where="a missing note"),
    case("[[X]]", {}, "unresolved:x", where="missing, as written"),
    case("[[x]]", {}, "unresolved:x", where="missing, lower case: the same note"),
    case("[[X.md]]", {}, "unresolved:x", where="missing, with .md: the same note"),
    case("[[src]]", {}, "none", where="a link to itself"),
    case("[[Empty]]", {"Empty.md": ""}, "Empty.md (name)", where="an empty file is a note"),
    case("[[Blank]]", {"Blank.md": "  \n\n"}, "Blank.md (name)", where="a whitespace-only file is a note"),
]

SHORTEST_PATH = [
    case("[[Note]]", {"a/Note.md": N, "b/Note.md": N}, "b/Note.md (name)", source="b/src.md",
         where="duplicate names: the linking note's folder first"),
    case("[[Note]]", {"Note.md": N, "a/Note.md": N}, "Note.md (name)", where="duplicates: nearest the root"),
    case("[[Note]]", {"a/b/Note.md": N, "a/Note.md": N}, "a/Note.md (name)", source="c/src.md",
         where="duplicates: fewer folders first"),
    case("[[Note]]", {"b/Note.md": N, "a/Note.md": N}, "a/Note.md (name)", source="c/src.md",
         where="duplicates at one depth: the first by path"),
    case("[[a/Note]]", {"a/Note.md": N, "b/Note.md": N}, "a/Note.md (path)", where="shortest path disambiguates"),
    case("[[b/Note]]", {"x/b/Note.md": N, "y/Note.md": N}, "x/b/Note.md (path)", where="a path suffix"),
    case("[[Folder/NOTE]]", {"folder/Note.md": N}, "folder/Note.md (path)", where="a path, any case"),
]

RELATIVE_PATHS = [
    case("[[./Note]]", {"a/Note.md": N, "Note.md": N}, "a/Note.md (path)", source="a/src.md", where="./"),
    case("[[../Note]]", {"a/Note.md": N, "a/b/Note.md": N}, "a/Note.md (path)", source="a/b/src.md", where="../"),
    case("[[../dir2/Note]]", {"dir1/Note.md": N, "dir2/Note.md": N}, "dir2/Note.md (path)",
         source="dir1/src.md", where="../ into a sibling folder"),
    case("[[./Note]]", {"b/Note.md": N}, "unresolved:a/note", source="a/src.md",
         where="./ never falls back to another folder's file"),
    case("[[sub/Note]]", {"a/sub/Note.md": N, "sub/Note.md": N}, "a/sub/Note.md (path)", source="a/src.md",
         where="relative to the linking note first"),
    case("[[sub/Note]]", {"sub/Note.md": N}, "sub/Note.md (path)", source="a/src.md",
         where="then from the vault root"),
    case("[[/sub/Note]]", {"a/sub/Note.md": N, "sub/Note.md": N}, "sub/Note.md (path)", source="a/src.md",
         where="a leading / is the vault root"),
    case("[[a/./b/../Note]]", {"a/Note.md": N}, "a/Note.md (path)", where="dot segments"),
    case("[[../../../../etc/passwd]]", {}, "none", source="a/src.md", where="out of the vault: never followed"),
    case("[[../Note.md]]", {"Note.md": N}, "Note.md (path)", source="a/src.md", where="../ with .md"),
]

MARKDOWN_LINKS = [
    case("[t](Note.md)", {"Note.md": N}, "Note.md (name)", where="markdown"),
    case("[t](Note)", {"Note.md": N}, "Note.md (name)", where="markdown without .md"),
    case("[t](Some%20Note.md)", {"Some Note.md": N}, "Some Note.md (name)", where="percent-encoded"),
    case("[t](<folder/Note with spaces.md>)", {"folder/Note with spaces.md": N},
         "folder/Note with spaces.md (path)", where="angle brackets"),
    case("[t](../folder/Some%20Note.md#Setup)", {"folder/Some Note.md": SECTIONED},
         "folder/Some Note.md#Setup (path)", source="x/src.md", where="relative, encoded, to a heading"),
    case("[t](Note.md \"a title\")", {"Note.md": N}, "Note.md (name)", where="with a link title"),
    case("[t](/folder/Note.md)", {"folder/Note.md": N, "a/folder/Note.md": N}, "folder/Note.md (path)",
         source="a/src.md", where="markdown, rooted"),
    case("[t](../Note.md)", {"Note.md": N}, "Note.md (path)", source="a/src.md", where="markdown ../"),
    case("[t][ref]\n\n[ref]: Note.md", {"Note.md": N}, "Note.md (name)", where="reference-style"),
    case("[Note][]\n\n[note]: folder/Note.md", {"folder/Note.md": N}, "folder/Note.md (path)",
         where="collapsed reference, labels in any case"),
    case("[ref]\n\n[ref]: <Some Note.md> \"t\"", {"Some Note.md": N}, "Some Note.md (name)", where="shortcut"),
    case("[t][missing-label]", {"Note.md": N}, "none", where="a reference without a definition is text"),
    case("[t](#Setup)", {}, "none", where="a heading this note does not have"),
    case("[t](Note.md#Step%201%20Configure)", {"Note.md": SECTIONED}, "Note.md#Step 1: Configure (name)",
         where="an encoded anchor"),
    case("[t](https://example.org/Note.md)", {"Note.md": N}, "none", where="an external URL"),
    case("[t](mailto:a@example.org)", {}, "none", where="a mailto URL"),
    case("[t](obsidian://open?vault=v&file=Note)", {"Note.md": N}, "none", where="an obsidian:// URI"),
    case("[t](file:///etc/passwd)", {}, "none", where="a file outside the vault"),
    case("[t](My Note.md)", {"My Note.md": N}, "none", where="an unencoded space: not a link"),
    case("[t](Bad%zzName.md)", {}, "unresolved:bad%zzname", where="a bad percent-encoding: read as written"),
    case("![alt](Note.md)", {"Note.md": N}, "Note.md (name)", where="a markdown embed of a note"),
    case("![alt](img/diagram.png)", {}, "attachment:img/diagram.png", where="a markdown embed of an image"),
    case("[t](paper.pdf)", {}, "attachment:paper.pdf", where="a markdown link to a PDF"),
    case("[^1]\n\n[^1]: Note.md", {"Note.md": N}, "none", where="a footnote is not a link"),
]

EMBEDS = [
    case("![[Note]]", {"Note.md": N}, "Note.md (name)", where="embed a note"),
    case("![[Note#Setup]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)", where="embed a heading"),
    case("![[Note#^blk]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)", where="embed a block"),
    case("![[diagram.png]]", {}, "attachment:diagram.png", where="embed an image"),
    case("![[paper.pdf#page=3]]", {}, "attachment:paper.pdf", where="embed a PDF page"),
    case("[[clip.mp4]]", {}, "attachment:clip.mp4", where="link a video"),
    case("![[Note|400]]", {"Note.md": N}, "Note.md (name)", where="an embed with a size"),
]

HEADINGS_AND_BLOCKS = [
    case("[[Note#Setup]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)", where="a heading"),
    case("[[Note#setup]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)", where="a heading in any case"),
    case("[[Note#Step 1 Configure]]", {"Note.md": SECTIONED}, "Note.md#Step 1: Configure (name)",
         where="as Obsidian writes a heading with ':'"),
    case("[[Note#step-1-configure]]", {"Note.md": SECTIONED}, "Note.md#Step 1: Configure (name)",
         where="a slug from another tool"),
    case("[[Note#Install#Setup]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)",
         where="a nested heading: Setup under Install"),
    case("[[Note#Top]]", {"Note.md": SECTIONED}, "Note.md#Top (name)", where="the first heading"),
    case("[[Note#^blk]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)", where="a block id ending a line"),
    case("[[Note#^TBL]]", {"Note.md": SECTIONED}, "Note.md#Table (name)", where="a block id under a table"),
    case("[[Note#Missing]]", {"Note.md": SECTIONED}, "Note.md (name)", where="a missing heading: the note"),
    case("[[Note#^nope]]", {"Note.md": SECTIONED}, "Note.md (name)", where="a missing block: the note"),
    case("[[Note#!!!]]", {"Note.md": SECTIONED}, "Note.md (name)", where="an anchor of symbols only"),
    case("[[Note#not a heading]]", {"Note.md": SECTIONED}, "Note.md (name)",
         where="a heading line inside a code fence is none"),
    case("[[Note#not one either]]", {"Note.md": SECTIONED}, "Note.md (name)",
         where="a heading line inside a math block is none"),
    case("[[rel:depends_on Note#Setup]]", {"Note.md": SECTIONED}, "Note.md#Setup (name)",
         where="a typed relation to a heading"),
]

SAME_NOTE = [
    pytest.param({"src.md": "---\ntype: project\n---\n# Source\n\n[[#Later]]\n\n## Later\n\nhere\n"}, "src.md",
                 "self#Later (self)", id="[[#Heading]]: a chunk of this note"),
    pytest.param({"src.md": "---\ntype: project\n---\n# Source\n\n[x](#later)\n\n## Later\n\nhere\n"}, "src.md",
                 "self#Later (self)", id="[x](#heading): a chunk of this note"),
    pytest.param({"src.md": "---\ntype: project\n---\n# Source\n\n![[#^b1]]\n\n## Later\n\nhere ^b1\n"},
                 "src.md", "self#Later (self)", id="![[#^block]]: a chunk of this note"),
    pytest.param({"src.md": "# Source\n\n[[#Source]] is this very chunk\n"}, "src.md", "none",
                 id="a link to its own chunk adds nothing"),
]

ALIASES_AND_TITLES = [
    case("[[AI]]", {"concepts/ki.md": "---\naliases: [AI, KI]\n---\n# Künstliche Intelligenz\n\nx\n"},
         "concepts/ki.md (alias)", where="an alias (Obsidian: unresolved)"),
    case("[[KI]]", {"k.md": "---\naliases: \"AI, KI\"\n---\nx\n"}, "k.md (alias)", where="aliases as a string"),
    case("[[Künstliche Intelligenz]]", {"concepts/ki.md": "# Künstliche Intelligenz\n\nx\n"},
         "concepts/ki.md (title)", where="a first heading (Obsidian: unresolved)"),
    case("[[Entscheidung: Qdrant]]", {"d/qdrant.md": "---\ntitle: \"Entscheidung: Qdrant\"\n---\nx\n"},
         "d/qdrant.md (title)", where="a frontmatter title"),
    case("[[AI]]", {"AI.md": N, "concepts/ki.md": "---\naliases: [AI]\n---\nx\n"}, "AI.md (name)",
         where="a file name beats an alias"),
    case("[[my-id]]", {"x/whatever.md": "---\nid: my-id\n---\nx\n"}, "x/whatever.md (id)", where="a frontmatter id"),
    case("[[AI#Setup]]", {"k.md": "---\naliases: [AI]\ntype: project\n---\n# K\n\nk\n\n## Setup\n\ns\n"},
         "k.md#Setup (alias)", where="an alias with a heading"),
]

NOT_READ = [
    case("`[[Note]]`", {"Note.md": N}, "none", where="inline code"),
    case("\n```\n[[Note]]\n```\n", {"Note.md": N}, "none", where="a fenced block"),
    case("\n~~~\n[[Note]]\n~~~\n", {"Note.md": N}, "none", where="a tilde fence"),
    case("$f([[Note]])$", {"Note.md": N}, "none", where="inline math"),
    case("\n$$\n[[Note]]\n$$\n", {"Note.md": N}, "none", where="a math block"),
    case("<!-- [[Note]] -->", {"Note.md": N}, "none", where="an HTML comment"),
    case("%% [[Note]] %%", {"Note.md": N}, "none", where="an Obsidian comment"),
    case("\n%%\n[[Note]]\n%%\n", {"Note.md": N}, "none", where="a comment block"),
    case("$5 or [[Note]] for $10", {"Note.md": N}, "Note.md (name)", where="dollar amounts are not math"),
    case("`a` [[Note]] `b`", {"Note.md": N}, "Note.md (name)", where="between code spans"),
]


@pytest.mark.parametrize(("files", "source", "expected"), [
    *INTERNAL_LINKS, *SHORTEST_PATH, *RELATIVE_PATHS, *MARKDOWN_LINKS, *EMBEDS, *HEADINGS_AND_BLOCKS, *SAME_NOTE,
    *ALIASES_AND_TITLES, *NOT_READ])
def test_a_link_resolves_as_obsidian_reads_it(tmp_path: Path, files, source: str, expected: str) -> None:
    assert resolve(tmp_path, files, source)[0] == expected


# --------------------------------------------------------------------------- tags and nested tags


@pytest.mark.parametrize(("text", "tags"), [
    ("#tag", ["tag"]),
    ("#Tag and #tag", ["tag"]),                                   # tags are case-insensitive
    ("#parent/child and #parent", ["parent/child", "parent"]),    # nested tags
    ("#1984 is a year, #y1984 a tag", ["y1984"]),                 # a tag needs one non-digit
    ("#a-b_c and #ünïcode", ["a-b_c", "ünïcode"]),
    ("#trail/", ["trail"]),
    ("---\ntags: [a, '#b']\n---\nx", ["a", "b"]),
    ("---\ntags: a, b\n---\nx", ["a", "b"]),
    ("---\ntags:\n  - project/active\n---\nx", ["project/active"]),
    ("---\ntags: [no, yes, on, off]\n---\nx", ["no", "yes", "on", "off"]),     # YAML 1.2: strings
    ("# Heading\n\n`#code` and\n```\n#fenced\n```\n<!-- #hidden -->", []),
    ("[[Note#heading]] and https://x.org/#frag", []),
])
def test_tags_read_as_obsidian_reads_them(types_config, text: str, tags: list[str]) -> None:
    assert parse_note(text.encode(), "n.md", types_config).tags == tags


# --------------------------------------------------------------------------- properties (YAML 1.2)


@pytest.mark.parametrize(("yaml_text", "expected", "left_out"), [
    ("draft: no", {"draft": "no"}, []),
    ("ok: true", {"ok": True}, []),
    ("aliases: [yes, 2024, 1.10]", {"aliases": ["yes", "2024", "1.10"]}, []),
    ("created: 2024-05-01", {"created": "2024-05-01"}, []),
    ("n: 010\nm: 0o10", {"n": 10, "m": 8}, []),
    ("time: 1:30", {"time": "1:30"}, []),
    ("title: 1984\nid: 007", {"title": "1984", "id": "007"}, []),
    ("title: T\ndescription: {{description}}\ntags: [a]", {"title": "T", "tags": ["a"]}, [3]),
])
def test_properties_read_as_yaml_1_2(yaml_text: str, expected: dict, left_out: list[int]) -> None:
    assert parse_yaml_lines(yaml_text) == (expected, left_out)


def test_a_placeholder_property_is_one_warning_naming_its_line(tmp_path: Path) -> None:
    text = "---\ntitle: Tagesnotiz\ndescription: {{description}}\naliases: [Heute]\n---\nbody\n"
    _, report = resolve(tmp_path, {"src.md": text})
    assert [(i.level, i.path, i.line) for i in report.issues] == [("warning", "src.md", 3)]
    assert "template placeholder" in report.issues[0].message


# --------------------------------------------------------------------------- bad input: a report line each


@pytest.mark.parametrize(("link", "message"), [
    ("[[Note", "unclosed link at column 1"),
    ("text [[Note and more", "unclosed link at column 6"),
    ("[[" + "../" * 10_000 + "x]]", "points outside the vault; not followed"),
    ("[t](../../../outside.md)", "points outside the vault; not followed"),
    ("[t](file:///etc/passwd)", "a file outside the vault; not followed"),
    ("[t](C:\\Users\\me\\x.md)", "a file outside the vault; not followed"),
    ("[t](bad%E2%82.md)", "bad percent-encoding (the encoded bytes are not UTF-8)"),
    ("[t](bad%2.md)", "bad percent-encoding (a '%' not followed by two hex digits)"),
    ("[[Note#!!!]]", "heading anchor '#!!!' has no letters or digits"),
    ("[[Note#Nowhere]]", "no heading '#Nowhere' in the linked note"),
    ("[t](My Note.md)", "a Markdown link that does not parse"),
])
def test_bad_links_are_report_lines_with_file_line_and_fix(tmp_path: Path, link: str, message: str) -> None:
    start = time.perf_counter()
    target, report = resolve(tmp_path, {"Note.md": SECTIONED, "sub/src.md": f"# S\n\nfirst line\n{link}\n"},
                             source="sub/src.md")
    assert time.perf_counter() - start < 10
    lines = [i for i in report.issues if i.path == "sub/src.md"]
    assert [(i.level, i.line) for i in lines] == [("warning", 4)], [str(i) for i in report.issues]
    assert message in lines[0].message and "(fix: " in str(lines[0])


def test_the_report_counts_links_by_syntax_and_rule_and_lists_ambiguous_names(tmp_path: Path) -> None:
    files = {"a/Shared.md": N, "b/Shared.md": N, "Note.md": SECTIONED, "k.md": "---\naliases: [AI]\n---\nx\n",
             "src.md": "# S\n\n[[Shared]] [t](Note.md#Setup) ![[Note]] [[AI]] [[Nope]] [[Note#Gone]] "
                       "https://example.org [u](https://example.com)\n"}
    vault = write_vault(tmp_path / "vault", files)
    from mindnet.indexing.pipeline import Importer  # noqa: F401 - the import's own report totals
    from mindnet.indexing.planning import entry_of
    report = ImportReport(vault=str(vault))
    from mindnet.settings import Settings
    planned = plan_vault(vault, Settings.from_env().types, report)
    for p in planned:
        report.add_links(p.note.path, entry_of(p, report.issues, 0).link_counts)
    data = report.as_dict()
    assert data["links_by_syntax"] == {"embed": 1, "markdown": 1, "wikilink": 4}
    assert data["links_by_rule"] == {"alias": 1, "name": 4, "unresolved": 1}
    assert data["ambiguous_names"] == [{"name": "shared", "notes": 2, "linking_notes": 1}]
    assert (data["anchors_unresolved"], data["urls"]) == (1, 2)
