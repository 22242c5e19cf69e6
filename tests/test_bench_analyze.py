"""The analyze benchmark's vault surgery: removing links to chosen notes, hiding relation kinds."""

from __future__ import annotations

from helpers_vault import load_types

from benchmarks.bench_analyze import hide_kinds, remove_links
from mindnet.indexing.edges import LinkResolver
from mindnet.vault.note import parse_note

TEXT = ("See [[Alpha|the A]] and [[Beta]].\n```\n[[Alpha]]\n```\n[[rel:depends_on Alpha]] ![[Alpha]]\n"
        "> [!edge] related_to: [[Alpha]] [[Beta]]\n> supports: [[Alpha]]\nend")


def resolver() -> LinkResolver:
    types = load_types()
    return LinkResolver([parse_note(b"# Alpha\n\nx", "a.md", types), parse_note(b"# Beta\n\ny", "b.md", types)])


def test_removing_links_keeps_prose_text_drops_typed_links_and_spares_code() -> None:
    r = resolver()
    alpha = r.resolve("Alpha")
    assert remove_links(TEXT, {alpha}, r) == ("See the A and [[Beta]].\n```\n[[Alpha]]\n```\n \n"
                                              "> [!edge] related_to:  [[Beta]]\nend")


def test_hiding_kinds_leaves_plain_links() -> None:
    assert hide_kinds(TEXT) == ("See [[Alpha|the A]] and [[Beta]].\n```\n[[Alpha]]\n```\n[[Alpha]] ![[Alpha]]\n"
                                "[[Alpha]] [[Beta]]\n[[Alpha]]\nend")
