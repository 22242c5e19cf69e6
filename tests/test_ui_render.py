"""The chat UI's Markdown and panel data (pure functions of mindnet.ui.render)."""

from __future__ import annotations

from datetime import datetime

import pytest
from helpers_ui import DRAFT_REPLY

from mindnet.ui import escaping, render

BREAKDOWN = {"semantic": 1.0, "dense": 0.9, "lexical": 0.8, "retriever_weight": 0.9, "edge_bonus": 0.6,
             "centrality_bonus": 1.0, "semantic_weight": 1.0, "edge_weight": 0.3, "centrality_weight": 0.2,
             "semantic_term": 0.9, "edge_term": 0.18, "centrality_term": 0.2, "total": 1.28}
HIT = {"node_id": "pagerank#c01", "note_id": "pagerank", "title": "**PageRank** <b>", "path": "concepts/pagerank.md",
       "type": "concept", "heading_path": ["PageRank"], "score": 1.28, "text": "PageRank ranks notes by links.",
       "score_breakdown": BREAKDOWN,
       "explanation": {"reasons": ["semantic match 1.000"], "via_graph": False,
                       "incoming": [{"direction": "incoming", "kind": "references", "rule_id": "explicit:wikilink",
                                     "confidence": 1.0, "other_id": "hybrid", "other_title": "Hybride Suche"}],
                       "outgoing": []}}


def test_breakdown_line_and_table_show_the_same_numbers_under_the_same_names() -> None:
    assert render.breakdown_line(BREAKDOWN) == "semantic 0.900 + links 0.180 + centrality 0.200 = 1.280"
    rows = {r["term"]: r for r in render.breakdown_rows(BREAKDOWN)}
    assert [rows[t]["value"] for t in ("semantic", "links", "centrality", "total")] == \
        ["0.900", "0.180", "0.200", "1.280"]
    assert rows["semantic"]["input"] == "match 1.000 (similarity 0.900, keyword match 0.800) x type weight 0.900"


def test_source_props_are_plain_data_with_plain_sentences_and_rule_ids_apart() -> None:
    props = render.source_props(2, HIT, query="Wie rankt PageRank Notizen?", query_id="q1")
    assert props["title"] == "**PageRank** <b>" and props["index"] == 2        # the element escapes it
    assert props["open_url"] == "/open?path=concepts%2Fpagerank.md"
    assert props["links"] == ["link from 'Hybride Suche' (wikilink)"]
    assert not any("explicit:wikilink" in w for w in props["why"] + props["links"])
    assert any("rule explicit:wikilink" in d for d in props["details"])
    assert props["highlight"] == ["rankt", "pagerank", "notizen"]


def test_source_summary_escapes_the_title_and_names_the_source_by_number() -> None:
    assert render.source_name(3) == "[3]"
    line = render.source_summary(3, HIT)
    assert line.startswith("- [3] **\\*\\*PageRank\\*\\* &lt;b&gt;** · ")


def test_a_source_shows_its_file_name_with_its_title_beside_it() -> None:
    hit = {**HIT, "title": "rag-paper", "names": ["Lewis et al. 2020 – *RAG*"],
           "explanation": {"outgoing": [{"kind": "references", "other_title": "Qdrant", "section": "Setup"}],
                           "incoming": [{"kind": "references", "other_title": "Index", "section": "Method"}]}}
    assert render.source_summary(1, hit).startswith("- [1] **rag-paper** (Lewis et al. 2020 – \\*RAG\\*) · ")
    props = render.source_props(1, hit, query="q", query_id="q1")
    assert (props["title"], props["names"]) == ("rag-paper (Lewis et al. 2020 – *RAG*)", ["Lewis et al. 2020 – *RAG*"])
    same = {**HIT, "title": "qdrant", "names": ["Qdrant"]}            # only the case differs: the name alone
    assert (render.source_props(1, same, query="q", query_id="q")["title"],
            render.source_summary(1, same).startswith("- [1] **qdrant** · ")) == ("qdrant", True)
    # the link into it lifted it (it has a link bonus); the link out of it added nothing, so it is not listed
    assert props["links"] == ["link from 'Index' (wikilink), to the section 'Method' here"]


def test_notices_keep_their_code_spans_and_escape_the_rest() -> None:
    assert escaping.inline_markdown("start `ollama serve` *now*") == "start `ollama serve` \\*now\\*"


def test_a_notice_shows_an_address_as_code_not_as_a_live_link() -> None:
    text = escaping.inline_markdown("not available in Ollama at http://127.0.0.1:11434). Or `http://x:1`; now http://a.b/c.")
    assert text == ("not available in Ollama at `http://127.0.0.1:11434`\\). Or `http://x:1`; now `http://a.b/c`.")


def test_cut_off_answer_is_marked_and_keeps_its_sources() -> None:
    text = render.answer_markdown(header="`FACT`", body="Qdrant ist ei", sources=[HIT], notice="failed",
                                  cut_off=True)
    assert "Qdrant ist ei … _(cut off: the model stopped while answering)_" in text
    assert "> ⚠ failed" in text and "- [1] " in text


def test_the_note_of_an_interview_reply_shows_only_in_the_editor() -> None:
    assert render.without_note_block(DRAFT_REPLY) == "Hier ist der Entwurf deiner Notiz:"
    assert render.without_note_block("Welcher Status?") == "Welcher Status?"


def test_history_rows_are_newest_first_once_per_question_in_local_time() -> None:
    records = [{"timestamp": "2025-06-01T12:00:00.000+00:00", "query_text": "A", "hits": []},
               {"timestamp": "2025-06-01T12:05:00.000+00:00", "query_text": "B", "strategy": "FACT", "mode": "hybrid",
                "hits": [{"title": "Qdrant"}]},
               {"timestamp": "2025-06-01T12:10:00.000+00:00", "query_text": "A", "hits": []}]
    rows = render.history_rows(records)
    local = datetime.fromisoformat("2025-06-01T12:10:00+00:00").astimezone().strftime("%Y-%m-%d %H:%M")
    assert [(r["query"], r["when"]) for r in rows][0] == ("A", local)
    assert [r["query"] for r in rows] == ["A", "B"] and rows[1]["how"] == "FACT / hybrid"


def test_import_progress_never_shows_zero_of_zero_and_the_report_lists_problems() -> None:
    assert "0/0" not in render.progress_markdown(done=0, total=0, texts=0, path="", elapsed=2.0)
    assert render.progress_markdown(done=2, total=4, texts=7, path="a.md", elapsed=10.0) == \
        "Re-importing ... 2/4 changed notes, 7 texts embedded, about 10 s left (last: a.md)"
    text = render.import_report_markdown({"notes": 3, "skipped": ["broken.md: bad YAML"],
                                          "unresolved_links": [{"note": "a.md", "link": "Nope"}]})
    assert "**2 problems:**" in text and "- skipped\\: broken.md\\: bad YAML" in text     # escaped Markdown
    assert "- unresolved link in a.md\\: \\[\\[Nope\\]\\]" in text


# --------------------------------------------------------------------------- images in answers (issue 27, item 3)


@pytest.mark.parametrize(("text", "shown"), [
    ("![](http://evil.example/p.png?q=1)", "[image](http://evil.example/p.png?q=1)"),
    ('a ![Karte](http://x.example/k.png "t") b', 'a [image: Karte](http://x.example/k.png "t") b'),
    ("![r][ref]\n\n[ref]: http://x.example/y.png", "[image: r][ref]\n\n[ref]: http://x.example/y.png"),
    ("[![badge](http://x.example/b.svg)](http://x.example)", "[[image: badge](http://x.example/b.svg)](http://x.example)"),
    ("\\![no image](u)", "\\![no image](u)"),
    ("\\\\![an image](u)", "\\\\[image: an image](u)"),
    ("`![code](u)` and ![img](v)", "`![code](u)` and [image: img](v)"),
    ("```md\n![code](u)\n```\n![img](v)", "```md\n![code](u)\n```\n[image: img](v)"),
    ("~~~\n![code](u)\n~~~~\n![img](v)", "~~~\n![code](u)\n~~~~\n[image: img](v)"),
    ("\\`![](http://evil.example/x) `", "\\`[image](http://evil.example/x) `"),   # not a code span after all
    ("no image [here](http://x.example)", "no image [here](http://x.example)"),
])
def test_images_in_an_answer_become_plain_links(text: str, shown: str) -> None:
    assert escaping.images_as_links(text) == shown


def test_no_answer_markdown_holds_an_image_a_commonmark_parser_would_load() -> None:
    from markdown_it import MarkdownIt
    tricky = ["``![a](u)`` ![b](v)", "> ```\n> ![c](w)\n> ```", "- ![d](x)\n\n      ![e](y)", "![f](<z z>)",
              "[![g](u)][r]\n\n[r]: v", "<span>![h](u)</span>", "```\n![i](u)", "`` ` ``![j](u)"]
    for text in tricky:
        tokens = list(MarkdownIt("commonmark").parse(render.answer_markdown(header="", body=text, sources=[])))
        while tokens:
            token = tokens.pop()
            assert token.type != "image", text
            tokens.extend(token.children or ())


def test_a_path_in_a_code_span_cannot_break_out() -> None:
    assert escaping.code_span("a`b ![x](y)") == "``a`b ![x](y)``"
    assert escaping.code_span("`x") == "`` `x ``"


# --------------------------------------------------------------------------- wording (issue 24, item 10)


def test_counts_in_the_steps_are_singular_for_one() -> None:
    one = render.step_output("retrieval", {"queries": ["Was ist Qdrant?"], "candidates": 1, "ms": 12})
    assert one.startswith("1 query, 1 candidate in 12 ms") and "queries" not in one
    two = render.step_output("retrieval", {"queries": ["a", "b"], "candidates": 7})
    assert two.startswith("2 queries, 7 candidates")
    assert render.how_sentence("generation", {"model": "m", "sources": 0}) == \
        "The model m wrote the answer without a source from your notes."
    assert render.how_sentence("generation", {"model": "m", "sources": 2}).endswith("wrote the answer from them.")
    said = render.how_sentence("retrieval", {"queries": ["Was ist Qdrant?"], "candidates": 1, "ms": 12})
    assert "found 1 candidate in" in said, said
    grown = render.how_sentence("graph", {"seeds": 1, "nodes": 1, "edges": 1, "ms": 3})
    assert grown.startswith("The graph expanded 1 top hit to 1 linked note over 1 link in"), grown
    assert "3 top hits to 5 linked notes over 2 links" in render.how_sentence("graph", {"seeds": 3, "nodes": 5,
                                                                                       "edges": 2})


def test_the_import_problems_say_their_level_once() -> None:
    lines = render.import_problems({"skipped": ["error: broken.md:2: bad YAML"],
                                    "warnings": ["warning: a.md:3: the link [[x]] has no target"]})
    assert lines == ["skipped: broken.md:2: bad YAML", "warning: a.md:3: the link [[x]] has no target"]
