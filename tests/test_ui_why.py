""""Why this source" in the chat's source panel, end to end in headless Chromium: one `mindnet serve` on a copy of
the sample vault plus a note the (fake) model cannot embed, so it is found by its keywords alone. The panel says
in ranked sentences what matched and what lifted the note, shows the score formula with its numbers, draws the
links that lifted it as an SVG graph, lists each linking note once, and its heading says "[n]" once.
Screenshots: test-artifacts/ui_why_*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from helpers_ui import ChatServer
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright
from test_ui_browser import ARGS, ARTIFACTS, CHROMIUM, DESKTOP, MOBILE, TIMEOUT, ask, last_answer, open_page, shot

pytestmark = pytest.mark.browser

NO_VECTOR = "KEINVEKTOR"      # the fake model returns no vector for a text holding this word
SPICE_NOTE = f"---\ntitle: Sternanis\ntype: concept\n---\n# Sternanis\n\nSternanis würzt Pho. {NO_VECTOR}\n"
QUESTION = "Warum habe ich Qdrant gewählt?"
THREAD_URL = re.compile(r"/ui/thread/[0-9a-f-]{36}$")
NUM = r"(\d+\.\d{3})"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_why"))
    srv.ollama.embed_fn = lambda text: [] if NO_VECTOR in text else srv.ollama.default_embed(text)
    srv.start(extra_notes={"Sternanis.md": SPICE_NOTE})
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser, server: ChatServer) -> Iterator[Page]:
    ARTIFACTS.mkdir(exist_ok=True)
    pg = open_page(browser, server, DESKTOP)
    yield pg
    pg.context.close()


@pytest.fixture
def phone(browser: Browser, server: ChatServer) -> Iterator[Page]:
    ARTIFACTS.mkdir(exist_ok=True)
    pg = open_page(browser, server, MOBILE)
    yield pg
    pg.context.close()


def source_number(pg: Page, title: str) -> int:
    """The "[n]" of the source `title` in the last answer's list of sources."""
    m = re.search(rf"\[(\d+)\]\s*{re.escape(title)}\b", last_answer(pg).inner_text())
    assert m, last_answer(pg).inner_text()
    return int(m.group(1))


def open_source(pg: Page, title: str) -> tuple[int, Locator]:
    """Click the source's "[n]" in the last answer: the side panel shows that source alone."""
    n = source_number(pg, title)
    last_answer(pg).locator("a.element-link", has_text=f"[{n}]").first.click()
    panel = pg.get_by_test_id("source-panel").filter(has=pg.get_by_test_id("source-title").filter(
        has_text=re.compile(rf"^(\[{n}\] )?{re.escape(title)}"))).first
    expect(panel).to_be_visible(timeout=TIMEOUT)
    expect(pg.get_by_test_id("source-panel")).to_have_count(1, timeout=TIMEOUT)     # alone, not the stack
    return n, panel


def test_why_says_what_matched_and_what_lifted_it_in_ranked_sentences(page: Page) -> None:
    ask(page, QUESTION)
    _, panel = open_source(page, "mindnet")
    why = panel.get_by_test_id("source-why")
    sentences = why.get_by_test_id("why-sentences").locator("li").all_inner_texts()
    assert 2 <= len(sentences) <= 3, sentences
    match = re.fullmatch(rf"Matches your question by meaning \(similarity {NUM}\) and by keywords \(keyword match "
                         rf"{NUM}\): match {NUM} -> \+{NUM}\.", sentences[0])
    assert match, sentences[0]
    lifted = re.fullmatch(rf"Lifted by links: \+{NUM} because (\d+) of the (\d+) best hits link to it \('[^)]*\) and "
                          rf"\+{NUM} because the links among the best hits lead here\.", sentences[1])
    assert lifted, sentences[1]
    assert sentences[2].startswith("Held back: 20 notes link to it, so each link counts less (x0.")   # a hub
    # the formula says the same numbers as the score line above it, and adds up
    score = re.search(rf"semantic {NUM} \+ links {NUM} \+ centrality {NUM} = {NUM}",
                      panel.get_by_test_id("source-breakdown").inner_text())
    formula = why.get_by_test_id("why-formula").inner_text()
    f = re.fullmatch(rf"total = W_sem x S_sem x W_type \+ W_edge x B_edge \+ W_cent x B_cent = {NUM} x {NUM} x "
                     rf"{NUM} \+ {NUM} x {NUM} \+ {NUM} x {NUM} = {NUM} \+ {NUM} \+ {NUM} = {NUM}", formula)
    assert score and f, formula
    assert f.groups()[7:] == score.groups()
    assert (match.group(3), match.group(4)) == (f.group(2), f.group(8))        # S_sem and the semantic term
    assert (lifted.group(1), lifted.group(4)) == (f.group(9), f.group(10))     # edge and centrality terms
    assert "rule" not in why.inner_text()                                     # rule ids only behind the toggle
    panel.get_by_test_id("source-details").locator("summary").click()
    expect(panel.get_by_test_id("source-details")).to_contain_text("rule ")
    shot(page, "why_01_sentences")


def test_the_links_that_lifted_it_are_drawn_once_each_and_listed_once_each(page: Page) -> None:
    ask(page, QUESTION)
    _, panel = open_source(page, "mindnet")
    lines = panel.get_by_test_id("why-links").locator("li").all_inner_texts()
    named = [re.match(r"(?:\d+ links|link) from '([^']+)'", line) for line in lines]
    senders = [m.group(1) for m in named if m]
    assert len(senders) == len(set(senders)) >= 3, lines                       # each linking note once
    assert len(lines) == len(set(lines))
    assert "3 links from 'qdrant-statt-chroma' (wikilink, supports, mentions its title)" in lines   # counted
    assert not any(line.startswith("links to") for line in lines)            # links out of it add nothing
    graph = panel.get_by_test_id("why-graph").locator("svg")
    expect(graph).to_have_attribute("role", "img")
    assert graph.locator("title").first.text_content() == "Links that lifted 'mindnet'"
    desc = graph.locator("desc").text_content()
    assert all(f"'{s}'" in desc for s in senders)                             # the text equivalent
    edges = graph.get_by_test_id("why-graph-edge")
    expect(edges).to_have_count(len(senders))
    froms = [edges.nth(i).get_attribute("data-from") for i in range(edges.count())]
    assert len(set(froms)) == len(froms)
    assert {edges.nth(i).get_attribute("data-to") for i in range(edges.count())} == {"proj-mindnet"}
    labels = edges.locator("text").all_text_contents()
    assert "wikilink, supports, mentions its title x3" in labels              # the edge kinds, and the count
    assert graph.get_by_test_id("why-graph-hit").locator("text").text_content() == "mindnet"
    assert graph.get_by_test_id("why-graph-node").locator("text").all_text_contents()[:len(senders)] == \
        [s if len(s) <= 20 else s[:19] + "…" for s in senders]
    box = graph.bounding_box()
    assert box and box["height"] > 100 and box["width"] <= panel.bounding_box()["width"] + 1
    graph.scroll_into_view_if_needed()
    shot(page, "why_02_graph")


def test_the_heading_of_a_source_says_its_number_once(page: Page) -> None:
    # the first answer of a new chat: after it the address becomes the thread's own and Chainlit draws the page
    # anew (its sidebar then marks the thread, listed under its topic); the sources panel keeps its title (it
    # was re-titled with the last source's name, "[5]")
    question = "Was ist hybride Suche?"
    ask(page, question)
    expect(page).to_have_url(THREAD_URL, timeout=TIMEOUT)
    titles = page.get_by_test_id("source-title").all_inner_texts()
    top = re.match(r"\[1\] (\S+)", titles[0])
    assert top, titles
    current = page.locator('[data-sidebar="menu-button"][data-active="true"]')
    expect(current).to_have_text(top.group(1), timeout=TIMEOUT)              # the thread's page is drawn
    expect(page.locator("#side-view-title")).to_have_text(f"{len(titles)} sources for: {question}",
                                                          timeout=TIMEOUT)
    # the panel stacks all the answer's sources under that title: each keeps its number
    titles = page.get_by_test_id("source-title").all_inner_texts()
    assert len(titles) > 1 and all(t.startswith(f"[{i}] ") for i, t in enumerate(titles, 1)), titles
    shot(page, "why_03_first_answer_panel")
    n, _ = open_source(page, "mindnet")
    side = page.locator("#side-view-title").locator("xpath=..")               # the heading and the panel
    expect(page.locator("#side-view-title")).to_have_text(f"[{n}]")
    assert side.inner_text().count(f"[{n}]") == 1, side.inner_text()
    shot(page, "why_03_heading")


def test_a_keyword_only_hit_says_keyword_match_not_similarity(page: Page) -> None:
    ask(page, "Sternanis")
    _, panel = open_source(page, "Sternanis")
    sentences = panel.get_by_test_id("why-sentences").locator("li").all_inner_texts()
    assert sentences[0] == ("Keyword match 1.000: its words match your question; its meaning was not compared "
                            "(the import has not embedded this passage yet) -> +1.000.")
    text = panel.inner_text()
    assert "similarity" not in text, text
    rows = panel.get_by_test_id("source-table").locator("tbody tr").first.inner_text()
    assert "keyword match 1.000 x type weight" in rows
    shot(page, "why_04_keyword_only")


def test_phone_shows_the_why_and_its_graph_within_the_screen(phone: Page) -> None:
    ask(phone, QUESTION)
    n, panel = open_source(phone, "mindnet")
    graph = panel.get_by_test_id("why-graph").locator("svg")
    graph.scroll_into_view_if_needed()
    # the side panel slides in from the right: measured mid-slide under load it stood at x=257 (CI)
    expect(graph).to_be_in_viewport(ratio=1, timeout=TIMEOUT)
    box = graph.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= MOBILE["width"]
    expect(panel.get_by_test_id("why-formula")).to_be_visible()
    dialog = phone.get_by_role("dialog")
    assert dialog.inner_text().count(f"[{n}]") == 1, dialog.inner_text()
    shot(phone, "why_05_mobile")
