"""The chat UI end to end in headless Chromium: one `mindnet serve` (fake Ollama, copy of the sample vault)
for the module; a question with its streamed answer, badge, steps and sources; the source panel of the
"HTML in notes" note shows its <script> as text; feedback lands in feedback.jsonl; an interview draft is
edited, survives a chat message in between, is saved and found by a query. Screenshots: test-artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers_ui import ANSWER, ChatServer
from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
TIMEOUT = 30_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_browser")).start()
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
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.goto(f"{server.url}/", wait_until="domcontentloaded")
    pg.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)   # sent by on_chat_start: socket is up
    yield pg
    context.close()
    assert dialogs == [], f"a script ran in the page: {dialogs}"


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"ui_{name}.png"), full_page=True)


def ask(pg: Page, text: str) -> None:
    """Send a message and wait for its complete answer (each answer gets one "Good answer" button)."""
    rated = pg.get_by_role("button", name="Good answer")
    before = rated.count()
    composer = pg.locator("#chat-input")
    composer.click()
    composer.fill(text)
    pg.locator("#chat-submit").click()
    expect(rated).to_have_count(before + 1, timeout=TIMEOUT)
    pg.locator("#stop-button").wait_for(state="detached", timeout=TIMEOUT)


def test_question_shows_streamed_answer_badge_steps_and_sources(page: Page) -> None:
    shot(page, "01_welcome")
    ask(page, "Warum habe ich Qdrant gewählt?")
    expect(page.get_by_text(ANSWER).first).to_be_visible()
    assert page.locator("code", has_text="DECISION").first.is_visible()
    for step in ("Intent routing", "Retrieval", "Graph expansion", "Scoring", "Generation"):
        assert page.locator(f'[id="step-{step}"]').first.is_visible(), step
    page.locator('[id="step-Intent routing"]').first.click()     # open a step: strategy and reason
    page.get_by_text("strategy DECISION", exact=False).first.wait_for(timeout=TIMEOUT)
    shot(page, "02_answer_steps")
    page.get_by_text("[1] ", exact=False).first.click()         # the first source opens in the side panel
    page.get_by_text("Why:").first.wait_for(timeout=TIMEOUT)
    assert page.get_by_text("Breakdown:").first.is_visible()
    shot(page, "03_source_why")


def test_note_html_shows_as_text_in_the_source_panel(page: Page) -> None:
    ask(page, "HTML in notes script alert escape")
    page.get_by_text(re.compile(r"^\[\d+\] HTML in notes$")).first.click()
    shot(page, "04_html_escaped")
    page.get_by_text("<script>alert('x')</script>", exact=False).first.wait_for(timeout=TIMEOUT)
    assert page.locator("script", has_text="alert('x')").count() == 0
    shot(page, "04_html_escaped")


def test_feedback_button_writes_feedback_jsonl(page: Page, server: ChatServer) -> None:
    ask(page, "Was ist hybride Suche?")
    before = len(server.records("feedback.jsonl"))
    page.get_by_role("button", name="Good answer").last.click()
    page.get_by_text("Feedback saved").first.wait_for(timeout=TIMEOUT)
    shot(page, "05_feedback")
    rows = server.records("feedback.jsonl")[before:]
    assert [(r["node_id"], r["score"]) for r in rows] == [("generated_answer", 5)]
    assert rows[0]["query_id"] in {r["query_id"] for r in server.records("search_history.jsonl")}


def test_interview_draft_is_edited_kept_saved_and_found(page: Page, server: ChatServer) -> None:
    ask(page, "Neues Projekt anlegen: Kräutergarten auf dem Balkon")
    editor = page.get_by_test_id("draft-text")
    editor.wait_for(timeout=TIMEOUT)
    shot(page, "06_draft")
    text = editor.input_value().replace("Basilikum und Minze", "Basilikum, Minze und Zitronenverbene")
    editor.fill(text)
    ask(page, "Was ist hybride Suche?")      # switch to chatting: the typed draft must survive
    assert "Zitronenverbene" in page.get_by_test_id("draft-text").first.input_value()
    page.get_by_test_id("draft-save").first.click()
    page.get_by_text("Saved ", exact=False).first.wait_for(timeout=TIMEOUT)
    shot(page, "07_draft_saved")
    saved = server.vault / "projects" / "Kräutergarten.md"
    assert "Zitronenverbene" in saved.read_text(encoding="utf-8")
    hits = httpx.post(f"{server.url}/query", json={"query": "Zitronenverbene Kräutergarten Balkon"},
                      timeout=30).json()["hits"]
    assert hits[0]["path"] == "projects/Kräutergarten.md"
