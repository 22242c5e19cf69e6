""""Why this source" (mindnet.ui.why) on real retriever output: the sample vault imported with the fake Ollama's
embeddings, plus one note the model cannot embed (found by its keywords alone)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fake_ollama import FakeOllama
from helpers_vault import copy_sample_vault, fake_settings

from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.results import plain_reasons
from mindnet.service import Mindnet
from mindnet.ui import render, why

NO_VECTOR = "KEINVEKTOR"      # the fake model returns no vector for a text holding this word
SPICE_NOTE = f"---\ntitle: Sternanis\ntype: concept\n---\n# Sternanis\n\nSternanis würzt Pho. {NO_VECTOR}\n"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mindnet]:
    tmp = tmp_path_factory.mktemp("why")
    copy_sample_vault(tmp / "vault")
    (tmp / "vault" / "Sternanis.md").write_text(SPICE_NOTE, encoding="utf-8")
    with FakeOllama() as server:
        server.embed_fn = lambda text: [] if NO_VECTOR in text else server.default_embed(text)
        mindnet = Mindnet(fake_settings(tmp, server.url))
        assert mindnet.ingest().vectors_missing == 1
        try:
            yield mindnet
        finally:
            mindnet.close()


def hits(app: Mindnet, query: str, mode: str = "hybrid") -> dict[str, dict]:
    out = app.query(QueryRequest(query=query, mode=mode))
    return {h["note_id"]: h for h in out["hits"]}


def by_title(found: dict[str, dict], title: str) -> dict:
    return next(h for h in found.values() if h["title"] == title)


def test_a_note_linking_several_times_is_one_line_with_its_count(app: Mindnet) -> None:
    hit = by_title(hits(app, "Trainingsplan Karate"), "periodisierung")
    kinds = [e["kind"] for e in hit["explanation"]["incoming"] if e["other_title"] == "karate-trainingsplan"]
    assert len(kinds) == 4                      # four edges from the one note in the retriever's record
    props = why.why_props(hit)
    assert props["links"] == [
        "4 links from 'karate-trainingsplan' (wikilink, depends on), one of them to the section "
        "'Phasen für ein Karate-Jahr' here",
        "link from 'trainingsplan-q3' (wikilink)",
        "link from '2025-06-21 Kein Wettkampf dieses Jahr' (wikilink)",
    ]
    edges = props["graph"]["edges"]
    assert [(e["from"], e["count"], e["label"]) for e in edges][0] == \
        ("proj-karate", 4, "wikilink, depends on x4")
    assert len({e["from"] for e in edges}) == len(edges) == 3          # each linking note drawn once


def test_the_sentences_carry_the_retrievers_figures(app: Mindnet) -> None:
    hit = by_title(hits(app, "Trainingsplan Karate"), "periodisierung")
    b, g = hit["score_breakdown"], hit["explanation"]["graph"]
    match, links, held = why.ranked_sentences(hit)
    assert match == (f"Matches your question by meaning (similarity {b['dense']:.3f}) and by keywords (keyword "
                     f"match {b['lexical']:.3f}): match {b['semantic']:.3f} -> +{b['semantic_term']:.3f}.")
    assert links == (f"Lifted by links: +{b['edge_term']:.3f} because 3 of the {g['seeds']} best hits link to it "
                     f"('karate-trainingsplan', 'trainingsplan-q3', '2025-06-21 Kein Wettkampf dieses Jahr') and "
                     f"+{b['centrality_term']:.3f} because the links among the best hits lead here.")
    assert held == (f"Held back: it is central in the whole vault, so the links leading here count less "
                    f"(x{g['centrality_damping']:.2f}).")


def test_the_sentence_that_added_most_comes_first(app: Mindnet) -> None:
    found = hits(app, "Warum habe ich Qdrant gewählt?")
    bm25 = by_title(found, "bm25")["score_breakdown"]
    assert bm25["edge_term"] + bm25["centrality_term"] > bm25["semantic_term"]     # the links weigh more here
    assert why.ranked_sentences(by_title(found, "bm25"))[0].startswith("Lifted by links: +0.300 because 4 of")
    assert why.ranked_sentences(by_title(found, "qdrant"))[0].startswith("Matches your question by meaning")


def test_a_hub_and_the_questions_type_are_said_to_hold_it_back(app: Mindnet) -> None:
    mindnet = by_title(hits(app, "Warum habe ich Qdrant gewählt?"), "mindnet")
    g = mindnet["explanation"]["graph"]
    assert g["hub_factor"] < 1
    assert f"Held back: {g['in_links']} notes link to it, so each link counts less (x{g['hub_factor']:.2f})" in \
        why.ranked_sentences(mindnet)[-1]
    ollama = by_title(hits(app, "Welche Entscheidung gab es zu Ollama?"), "ollama")
    assert ollama["score_breakdown"]["type_intent"] == 0.5
    assert why.ranked_sentences(ollama)[-1] == \
        "Held back: your question asks for another type of note than 'concept' (x0.50)."


def test_the_formula_line_adds_up_to_the_total(app: Mindnet) -> None:
    for hit in hits(app, "Warum habe ich Qdrant gewählt?").values():
        b, line = hit["score_breakdown"], why.formula_line(hit["score_breakdown"])
        assert line.startswith("total = W_sem x S_sem x W_type + W_edge x B_edge + W_cent x B_cent = ")
        nums = [float(x) for x in re.findall(r"\d+\.\d{3}", line)]
        w_sem, s_sem, w_type, w_edge, b_edge, w_cent, b_cent, sem, edge, cent, total = nums
        assert (w_sem, s_sem, w_type, w_edge, b_edge, w_cent, b_cent) == tuple(round(b[k], 3) for k in (
            "semantic_weight", "semantic", "retriever_weight", "edge_weight", "edge_bonus", "centrality_weight",
            "centrality_bonus"))
        assert (sem, edge, cent, total) == tuple(round(b[k], 3) for k in
                                                 ("semantic_term", "edge_term", "centrality_term", "total"))
        assert abs(w_sem * s_sem * w_type + w_edge * b_edge + w_cent * b_cent - total) < 0.005


def test_links_that_added_nothing_are_not_listed(app: Mindnet) -> None:
    found = hits(app, "Trainingsplan Karate")
    idle = [h for h in found.values() if h["score_breakdown"]["edge_term"] == 0
            and h["score_breakdown"]["centrality_term"] == 0 and h["explanation"]["outgoing"]]
    assert idle, "a hit with links and no link bonus"
    for hit in idle:
        assert any(r.startswith("links to") for r in plain_reasons(hit))        # the old list named them
        props = why.why_props(hit)
        assert (props["links"], props["graph"]) == ([], None)
        assert not any("link" in s for s in props["why"])
    # links out of a hit never lift it: none is listed, even when its incoming links did
    lifted = by_title(found, "karate-trainingsplan")
    assert lifted["explanation"]["outgoing"] and lifted["score_breakdown"]["edge_term"] > 0
    assert not any(line.startswith("links to") for line in why.why_props(lifted)["links"])


def test_a_note_lifted_only_by_the_walk_lists_the_links_that_carry_it(app: Mindnet) -> None:
    hit = by_title(hits(app, "write-things-down"), "karate-trainingsplan")
    b = hit["score_breakdown"]
    assert b["edge_term"] == 0 < b["centrality_term"]
    props = why.why_props(hit)
    assert props["why"][1] == (f"Lifted by links: +{b['centrality_term']:.3f} because the links among the best "
                               f"hits lead here.")
    senders = {e["other_id"] for e in hit["explanation"]["incoming"]}
    assert len(props["links"]) == len(senders) == 8
    assert len(props["graph"]["edges"]) == why.MAX_GRAPH_NOTES == 6         # the graph draws six, counts the rest
    assert props["graph"]["more"] == "and 2 more notes (listed below)"


def test_a_keyword_only_hit_says_keyword_match_not_similarity(app: Mindnet) -> None:
    hit = by_title(hits(app, "Sternanis"), "Sternanis")
    b = hit["score_breakdown"]
    assert b["dense"] is None and b["lexical"] == b["semantic"] == 1.0       # no vector: the words alone
    props = render.source_props(1, hit, query="Sternanis", query_id="q")
    assert props["why"][0] == ("Keyword match 1.000: its words match your question; its meaning was not compared "
                               "(the import has not embedded this passage yet) -> +1.000.")
    assert props["rows"][0]["input"] == "keyword match 1.000 x type weight 1.000"
    shown = " ".join([*props["why"], *(r["input"] for r in props["rows"])])
    assert "similarity" not in shown
    assert plain_reasons(hit)[0] == "matches your question by keywords only (keyword match 1.000)"


def test_a_semantic_search_hit_says_meaning_only(app: Mindnet) -> None:
    hit = by_title(hits(app, "Warum habe ich Qdrant gewählt?", mode="semantic"), "qdrant")
    b = hit["score_breakdown"]
    assert b["lexical"] is None
    assert why.ranked_sentences(hit)[0] == (
        f"Matches your question by meaning (similarity {b['dense']:.3f}, {b['semantic']:.3f} on the scale from the "
        f"weakest to the best candidate) -> +{b['semantic_term']:.3f}.")


def test_a_bonus_cut_below_the_better_hit_says_so(app: Mindnet) -> None:
    hit = by_title(hits(app, "Linsensuppe Rezept"), "karate-trainingsplan")
    b, g = hit["score_breakdown"], hit["explanation"]["graph"]
    assert b["graph_scale"] < 1 and g["capped_below"] == "Linsensuppe"
    assert why.ranked_sentences(hit)[-1].endswith(
        f"the link bonus was cut to {100 * b['graph_scale']:.0f}% to keep it below 'Linsensuppe', a better hit.")
