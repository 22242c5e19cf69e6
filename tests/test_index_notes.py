"""Index notes (MOCs, "Start here" pages, link lists): detected at import from the body's link shape or a tag,
given the `index` type (retriever_weight 0.3), flagged `index_note` in the payloads, damped and explained."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers_store import payloads
from helpers_vault import fake_settings, load_types, write_types, write_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.retriever import MindnetRetriever
from mindnet.service import Mindnet
from mindnet.vault.index_notes import is_index_body, link_shape
from mindnet.vault.note import parse_note

MOC = "# Karate\n\nEverything on training:\n\n" + "\n".join(
    f"- [[Kata {i}]]" for i in range(1, 9)) + "\n- [[Kumite]]: sparring rules\n"
ARTICLE = ("# Kata 1\n\nHeian Shodan is the first kata. It teaches [[Kumite]] stances, the [[Kata 2]] turn and "
           "the basic block. Practise it slowly before speed.\n\nSee also [[Kata 3]] for the next form.\n")


def test_link_shape_counts_link_items_and_text_lines() -> None:
    # 10 text lines (the heading does not count): 9 list items with links, 1 sentence without
    shape = link_shape(MOC)
    assert (shape.links, shape.lines, shape.link_lines) == (9, 10, 9)
    assert shape.share == pytest.approx(0.9)
    # a prose note: both text lines have links; the paragraph has 25 other words, "See also ... for the next
    # form." 6, so 1 of 2 lines is a link item, and 3 links are below min_links anyway
    prose = link_shape(ARTICLE)
    assert (prose.links, prose.lines, prose.link_lines) == (3, 2, 1)


@pytest.mark.parametrize(("body", "expected"), [
    (MOC, True),
    (ARTICLE, False),
    ("# Few\n\n- [[A]]\n- [[B]]\n- [[C]]\n", False),                     # 3 links: below min_links
    ("\n".join(f"- [[N{i}]] | [[M{i}]]" for i in range(5)) + "\n" + "Words here. " * 3 + "\n" * 2
     + "\n".join(f"Line {i} of plain prose without any link in it." for i in range(6)), False),  # 5 of 12 lines
    ("```\n" + "\n".join(f"- [[N{i}]]" for i in range(10)) + "\n```\nText.", False),  # links in code
    ("\n".join(f"* [{i}](notes/{i}.md)" for i in range(9)), True),       # markdown links count too
])
def test_index_body_needs_enough_links_and_mostly_link_lines(body: str, expected: bool) -> None:
    assert is_index_body(body, min_links=8, min_link_lines=0.6, max_item_words=8) is expected


def test_untyped_link_list_becomes_an_index_note_but_a_frontmatter_type_wins() -> None:
    types = load_types()
    assert parse_note(MOC.encode(), "Karate MOC.md", types).type == "index"
    assert parse_note(MOC.encode(), "projects/karate.md", types).type == "index"      # over the path rule
    assert parse_note(b"---\ntype: project\n---\n" + MOC.encode(), "k.md", types).type == "project"
    assert parse_note(b"---\ntype: moc\n---\nshort", "k.md", types).type == "index"   # alias
    assert parse_note(ARTICLE.encode(), "Kata 1.md", types).type == "concept"
    assert parse_note(b"# Start\n\nRead [[A]] first.\n\n#moc", "Start.md", types).type == "index"  # tag


def test_detection_is_off_without_the_index_type(tmp_path: Path) -> None:
    types = load_types(write_types(tmp_path / "types.yaml", **{"index_notes.enabled": False}))
    assert parse_note(MOC.encode(), "Karate MOC.md", types).type == "concept"


def test_the_sample_vault_has_one_index_note_its_start_page() -> None:
    from mindnet.settings import SAMPLE_VAULT
    types = load_types()
    found = [p.relative_to(SAMPLE_VAULT).as_posix() for p in sorted(SAMPLE_VAULT.rglob("*.md"))
             if not p.relative_to(SAMPLE_VAULT).as_posix().startswith((".", "templates/"))
             and parse_note(p.read_bytes(), p.relative_to(SAMPLE_VAULT).as_posix(), types).type == "index"]
    assert found == ["Willkommen.md"]


WORDS = ["heian", "kata", "kumite", "block", "sparring", "stance"]


def karate_embedding(text: str) -> list[float]:
    words = text.lower().replace(":", " ").replace(".", " ").replace("[", " ").replace("]", " ").split()
    vec = [float(words.count(w)) for w in WORDS] + [1e-3] * 58
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


def test_an_imported_moc_is_flagged_damped_below_the_note_it_lists_and_explained(tmp_path: Path,
                                                                                   fake_ollama) -> None:
    fake_ollama.embed_fn = karate_embedding
    write_vault(tmp_path / "vault", {"Karate MOC.md": MOC, "Kata 1.md": ARTICLE,
                                     "Kumite.md": "# Kumite\n\nSparring with rules and a referee.\n"})
    settings = fake_settings(tmp_path, fake_ollama.url)
    app = Mindnet(settings)
    try:
        app.ingest()
        notes = {p["title"]: p for p in payloads(app.store, "notes", ["title", "type", "index_note"])}
        assert {t: (p["type"], p["index_note"]) for t, p in notes.items()} == {
            "Karate MOC": ("index", True), "Kata 1": ("concept", False), "Kumite": ("concept", False)}
        chunks = list(payloads(app.store, "chunks", ["title", "index_note"]))
        assert {c["title"]: c["index_note"] for c in chunks} == {
            "Karate MOC": True, "Kata 1": False, "Kumite": False}
        retriever = MindnetRetriever.from_settings(settings, store=app.store, embed_model=app.embed_model)
        # the MOC names "kata" 9 times, the article 3 times: the damping keeps the article above the list
        hits = retriever.search(QueryRequest(query="kata", mode="hybrid", top_k=3)).nodes
        order = [h.node.metadata["title"] for h in hits]
        assert order.index("Kata 1") < order.index("Karate MOC")
        moc = next(h for h in hits if h.node.metadata["title"] == "Karate MOC").node.metadata
        assert moc["score_breakdown"]["retriever_weight"] == 0.3
        assert "index note (mostly links to other notes): damped (x0.3)" in moc["explanation"]["reasons"]
    finally:
        app.close()
