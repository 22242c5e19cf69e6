"""One rating per answer (issue 24, item 2): mindnet's "Good answer" / "Bad answer" with optional reasons and a
comment, saved in feedback.jsonl with the query_id; Chainlit's own thumbs nowhere on the page; a resumed thread
shows the rating that counts and nothing contradicting it.

A real `mindnet serve` (fake Ollama, a copy of the sample vault) and headless Chromium, desktop 1400x900 and
mobile 390x844, through the helpers of test_ui_browser. Screenshots: test-artifacts/ui_feedback_*.png.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import test_ui_browser as ui
from helpers_ui import ANSWER, ChatServer
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

pytestmark = pytest.mark.browser

# Chainlit's thumbs: lucide icons in its buttons; mindnet's rating has none, so any such button is Chainlit's
CHAINLIT_THUMBS = "button:has(svg.lucide-thumbs-up), button:has(svg.lucide-thumbs-down)"
CHAINLIT_FEEDBACK = ".positive-feedback-on, .positive-feedback-off, .negative-feedback-on, .negative-feedback-off"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_feedback")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not ui.CHROMIUM.exists():
        pytest.fail(f"{ui.CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(ui.CHROMIUM), args=ui.ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(params=["desktop", "mobile"])
def any_page(request: pytest.FixtureRequest, browser: Browser, server: ChatServer) -> Iterator[Page]:
    ui.ARTIFACTS.mkdir(exist_ok=True)
    pg = ui.open_page(browser, server, ui.DESKTOP if request.param == "desktop" else ui.MOBILE)
    yield pg
    pg.context.close()


@pytest.fixture
def page(browser: Browser, server: ChatServer) -> Iterator[Page]:
    ui.ARTIFACTS.mkdir(exist_ok=True)
    pg = ui.open_page(browser, server, ui.DESKTOP)
    yield pg
    pg.context.close()


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ui.ARTIFACTS / f"ui_feedback_{name}.png"))


def query_id_of(server: ChatServer, question: str) -> str:
    return next(r["query_id"] for r in reversed(server.records("search_history.jsonl"))
                if r["query_text"] == question)


def ratings_of(server: ChatServer, query_id: str) -> list[dict[str, Any]]:
    return [r for r in server.records("feedback.jsonl")
            if r["query_id"] == query_id and r.get("node_id") == "generated_answer"]


def assert_no_chainlit_feedback_visible(pg: Page) -> None:
    expect(pg.locator(f"{CHAINLIT_THUMBS} >> visible=true")).to_have_count(0)
    expect(pg.locator(f"{CHAINLIT_FEEDBACK} >> visible=true")).to_have_count(0)
    expect(pg.get_by_role("dialog")).to_have_count(0)          # nor its feedback dialog


def rating_of(answer: Locator) -> Locator:
    return answer.get_by_role("group", name="Rate this answer")


# --------------------------------------------------------------------------- one set of controls


def test_each_answer_has_one_set_of_rating_controls_and_no_chainlit_thumbs(any_page: Page) -> None:
    pg = any_page
    for question in ("Warum habe ich Qdrant gewählt?", "Was ist hybride Suche?"):
        ui.ask(pg, question)
    answers = pg.locator("[data-step-type=assistant_message]").filter(has_text=ANSWER[:30])
    expect(answers).to_have_count(2)
    for i in range(2):
        answer = answers.nth(i)
        expect(answer.get_by_role("button", name="Good answer")).to_have_count(1)
        expect(answer.get_by_role("button", name="Bad answer")).to_have_count(1)
        expect(answer.locator("[data-testid=answer-rating]")).to_have_count(1)
    assert pg.locator(CHAINLIT_FEEDBACK).count() > 0     # Chainlit does draw its thumbs ...
    assert_no_chainlit_feedback_visible(pg)              # ... and none of them shows
    answers.last.get_by_role("button", name="Bad answer").click()
    expect(answers.last.get_by_role("button", name="Bad answer ✓")).to_be_visible(timeout=ui.TIMEOUT)
    expect(pg.get_by_role("button", name="Good answer ✓")).to_have_count(0)
    assert_no_chainlit_feedback_visible(pg)              # no red thumbs-down beside "Bad answer ✓"
    box = rating_of(answers.last).bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= pg.viewport_size["width"]   # fits the screen
    shot(pg, f"01_one_rating_{pg.viewport_size['width']}")


# --------------------------------------------------------------------------- reasons and a comment


def test_bad_answer_with_reasons_and_comment_lands_in_feedback_jsonl(page: Page, server: ChatServer) -> None:
    question = "Welche Datenbank nutze ich für den Wissensgraphen?"
    ui.ask(page, question)
    query_id = query_id_of(server, question)
    answer = ui.last_answer(page)
    bad = answer.get_by_role("button", name="Bad answer")
    bad.focus()
    page.keyboard.press("Enter")                                   # keyboard only, from here on
    expect(answer.get_by_role("button", name="Bad answer ✓")).to_have_attribute("aria-pressed", "true",
                                                                            timeout=ui.TIMEOUT)
    details = answer.get_by_role("group", name="What was wrong? (optional)")
    expect(details).to_be_visible()
    wrong_source = details.get_by_role("button", name="wrong source")
    page.keyboard.press("Tab")
    expect(wrong_source).to_be_focused()
    page.keyboard.press("Space")
    expect(wrong_source).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Tab")                                     # "missing note": left out
    page.keyboard.press("Tab")
    wrong_answer = details.get_by_role("button", name="wrong answer")
    expect(wrong_answer).to_be_focused()
    page.keyboard.press("Enter")
    expect(wrong_answer).to_have_attribute("aria-pressed", "true")
    comment = details.get_by_role("textbox", name="Comment (optional)")
    page.keyboard.press("Tab")
    expect(comment).to_be_focused()
    page.keyboard.type("Die Notiz zu Qdrant fehlt")
    page.keyboard.press("Tab")
    expect(details.get_by_role("button", name="Save reasons")).to_be_focused()
    shot(page, "02_bad_answer_details")
    page.keyboard.press("Enter")
    expect(answer.get_by_role("status")).to_have_text("Thanks: your reasons were saved.", timeout=ui.TIMEOUT)
    expect(answer.get_by_test_id("rate-summary")).to_have_text(
        "wrong source · wrong answer · “Die Notiz zu Qdrant fehlt”")
    rows = ratings_of(server, query_id)
    assert [(r["score"], r["reasons"], r["comment"]) for r in rows] == [
        (1, [], None), (1, ["wrong_source", "wrong_answer"], "Die Notiz zu Qdrant fehlt")]
    remark = next(m for m in server.feedback_report()["remarks"] if m["query_id"] == query_id)
    assert (remark["query_text"], remark["reasons"]) == (question, ["wrong_source", "wrong_answer"])
    assert_no_chainlit_feedback_visible(page)
    shot(page, "03_bad_answer_saved")


# --------------------------------------------------------------------------- after a reload


def test_on_a_phone_the_reasons_and_comment_fit_the_screen_and_are_saved(browser: Browser, server: ChatServer) -> None:
    pg = ui.open_page(browser, server, ui.MOBILE)
    try:
        question = "Wie speichere ich Notizen lokal?"
        ui.ask(pg, question)
        query_id = query_id_of(server, question)
        answer = ui.last_answer(pg)
        answer.get_by_role("button", name="Bad answer").click()                     # tapped, not typed
        details = answer.get_by_role("group", name="What was wrong? (optional)")
        expect(details).to_be_visible(timeout=ui.TIMEOUT)
        box = details.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= ui.MOBILE["width"], box   # within the screen
        details.get_by_role("button", name="missing note").click()
        details.get_by_role("textbox", name="Comment (optional)").fill("Die Notiz zum Backup fehlt")
        details.get_by_role("button", name="Save reasons").click()
        expect(answer.get_by_role("status")).to_have_text("Thanks: your reasons were saved.", timeout=ui.TIMEOUT)
        assert pg.evaluate("() => document.scrollingElement.scrollWidth <= window.innerWidth")   # no sideways scroll
        rows = ratings_of(server, query_id)
        assert (rows[-1]["score"], rows[-1]["reasons"], rows[-1]["comment"]) == \
            (1, ["missing_note"], "Die Notiz zum Backup fehlt"), rows
        shot(pg, "04_bad_answer_phone")
    finally:
        pg.context.close()


def open_thread(pg: Page) -> str:
    """Reopen the conversation from the thread store: after its first answer the page is at the thread's own
    URL, and a reload resumes it there."""
    expect(pg).to_have_url(re.compile(r"/ui/thread/[0-9a-f-]+$"), timeout=ui.TIMEOUT)
    pg.reload(wait_until="domcontentloaded")
    pg.locator("#chat-settings-open-modal").wait_for(timeout=ui.TIMEOUT)
    expect(pg.get_by_text(ANSWER[:30], exact=False)).to_have_count(1, timeout=ui.TIMEOUT)
    return pg.url.rsplit("/", 1)[1]


def test_a_changed_rating_shows_alone_after_the_thread_is_resumed(page: Page, server: ChatServer) -> None:
    question = "Warum Qdrant und nicht Chroma für den Graphen?"
    ui.ask(page, question)
    query_id = query_id_of(server, question)
    answer = ui.last_answer(page)
    answer.get_by_role("button", name="Bad answer").click()
    answer.get_by_role("button", name="missing note").click()
    answer.get_by_role("button", name="Save reasons").click()
    expect(answer.get_by_role("status")).to_have_text("Thanks: your reasons were saved.", timeout=ui.TIMEOUT)
    answer.get_by_role("button", name="Good answer").click()        # changed: the last rating counts
    expect(answer.get_by_role("button", name="Good answer ✓")).to_be_visible(timeout=ui.TIMEOUT)
    assert [r["score"] for r in ratings_of(server, query_id)][-1] == 5
    expect(page).to_have_url(re.compile(r"/ui/thread/[0-9a-f-]+$"), timeout=ui.TIMEOUT)
    server.wait_answers_stored(page.url.rsplit("/", 1)[1], 1)       # the last writes of the streamed answer

    thread_id = open_thread(page)
    resumed = page.locator("[data-step-type=assistant_message]").filter(has_text=ANSWER[:30])
    expect(resumed.get_by_role("button", name="Good answer ✓")).to_have_attribute("aria-pressed", "true",
                                                                               timeout=ui.TIMEOUT)
    expect(resumed.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "false")
    expect(page.get_by_role("button", name="Bad answer ✓")).to_have_count(0)
    assert_no_chainlit_feedback_visible(page)
    shot(page, "04_resumed_thread_rating")

    # a thumbs-down given with Chainlit's own control before this version, still in threads.sqlite
    db = server.root / "threads.sqlite"
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute('SELECT "id" FROM steps WHERE "threadId" = ? AND "name" = ? ORDER BY "createdAt" '
                                'DESC LIMIT 1', (thread_id, "on_message")).fetchone()
        con.execute('INSERT INTO feedbacks ("id", "forId", "threadId", "value", "comment") VALUES (?, ?, ?, 0, ?)',
                    (str(uuid.uuid4()), run_id, thread_id, "alt"))
    page.reload(wait_until="domcontentloaded")
    expect(page.get_by_role("button", name="Good answer ✓")).to_have_count(1, timeout=ui.TIMEOUT)
    expect(page.locator(".negative-feedback-on")).to_have_count(0)    # not given back, so not drawn red
    assert_no_chainlit_feedback_visible(page)
    # the rating is changed again in the resumed thread, and that lands in feedback.jsonl too
    page.get_by_role("button", name="Bad answer").click()
    expect(page.get_by_role("button", name="Bad answer ✓")).to_be_visible(timeout=ui.TIMEOUT)
    expect(page.get_by_role("button", name="Good answer ✓")).to_have_count(0)
    assert [r["score"] for r in ratings_of(server, query_id)][-1] == 1
    shot(page, "05_resumed_thread_changed")


def test_no_request_left_this_machine() -> None:
    outside = [u for u in ui.REQUESTS if not u.startswith(("http://127.0.0.1", "data:", "blob:"))]
    assert ui.REQUESTS and not outside, outside[:5]
