"""Accessibility of the chat page in headless Chromium: axe-core 4 (the real axe.min.js, shipped by the
axe-playwright-python package of the test extra, injected into the page) scans the whole page on the welcome
screen, with a source panel open and with the draft editor open, in the light and the dark theme; and the
whole UI works from the keyboard alone (keyboard.type and keyboard.press, never the mouse).
The axe scan is generic: whatever the page shows (other engineers' panels and chips too) is checked.
Screenshots: test-artifacts/ui_a11y_*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from helpers_ui import ChatServer
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError
from test_ui_browser import ARTIFACTS, DESKTOP, MOBILE, TIMEOUT, browser, editor_after_the_move, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

BLOCKING = ("critical", "serious")
THEME_KEY = "vite-ui-theme"       # where Chainlit's theme toggle keeps the choice (localStorage)
QUESTION = "Warum habe ich Qdrant gewählt?"
NEW_NOTE = "Neues Projekt anlegen: Kräutergarten auf dem Balkon"


def themed_page(browser: Browser, server: ChatServer, theme: str, viewport: dict[str, int]) -> Page:  # noqa: F811
    context = browser.new_context(viewport=viewport)
    context.add_init_script(f"window.localStorage.setItem('{THEME_KEY}', '{theme}')")
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.goto(f"{server.url}/", wait_until="domcontentloaded")
    pg.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)   # the socket is up
    expect(pg.locator("html")).to_have_class(re.compile(rf"\b{theme}\b"))
    return pg


@pytest.fixture
def desktop(browser: Browser, server: ChatServer, request: pytest.FixtureRequest) -> Iterator[Page]:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    server.ollama.chat_mode = "ok"
    pg = themed_page(browser, server, getattr(request, "param", "light"), DESKTOP)
    yield pg
    pg.context.close()


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"ui_a11y_{name}.png"))


def blocking_violations(pg: Page) -> list[str]:
    """axe-core's critical and serious violations on the whole page, one line per element, once the page's
    finite animations have ended (text fading in is measured against its half-transparent colour: a welcome
    starter on a phone failed color-contrast while it faded in)."""
    pg.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running'"
                         " || a.effect?.getTiming().iterations === Infinity)", timeout=TIMEOUT)
    results: dict[str, Any] = Axe().run(pg, options={"resultTypes": ["violations"]}).response
    assert results["testEngine"]["name"] == "axe-core" and results["testEngine"]["version"].startswith("4."), \
        results["testEngine"]
    return [f"{v['id']} ({v['impact']}): {' '.join(map(str, n['target']))}: {n['html'][:160]}"
            for v in results["violations"] if v["impact"] in BLOCKING for n in v["nodes"]]


def wait_answers(pg: Page, count: int) -> None:
    expect(pg.get_by_role("button", name="Good answer")).to_have_count(count, timeout=TIMEOUT)
    pg.locator("#stop-button").wait_for(state="detached", timeout=TIMEOUT)


# --------------------------------------------------------------------------- axe-core, both themes


@pytest.mark.parametrize("desktop", ["light", "dark"], indirect=True)
def test_axe_finds_no_critical_or_serious_violation(desktop: Page) -> None:
    pg = desktop
    theme = "dark" if "dark" in (pg.locator("html").get_attribute("class") or "") else "light"
    found: dict[str, list[str]] = {}
    pg.locator("#welcome-screen [id^=starter-]").first.wait_for(timeout=TIMEOUT)
    found["welcome"] = blocking_violations(pg)
    shot(pg, f"{theme}_welcome")

    pg.locator("#chat-input").fill(QUESTION)
    pg.locator("#chat-submit").click()
    wait_answers(pg, 1)
    pg.locator("a.element-link", has_text="[1]").first.click()
    expect(pg.get_by_test_id("source-panel").first).to_be_visible(timeout=TIMEOUT)
    found["source panel"] = blocking_violations(pg)
    shot(pg, f"{theme}_source_panel")

    pg.locator("#chat-input").fill(NEW_NOTE)
    pg.locator("#chat-submit").click()
    pg.get_by_test_id("draft-text").wait_for(timeout=TIMEOUT)
    expect(pg.get_by_test_id("suggestion").first).to_be_visible(timeout=TIMEOUT)
    found["draft editor"] = blocking_violations(pg)
    shot(pg, f"{theme}_draft_editor")

    assert {scene: lines for scene, lines in found.items() if lines} == {}
    # the icon-only buttons say what they do (Chainlit's tooltip words)
    for name in ("Send message", "New chat", "Settings", "Copy to clipboard"):
        expect(pg.get_by_role("button", name=name, exact=True).first).to_be_attached()
    expect(pg.get_by_role("textbox", name="Text of the note Kräutergarten")).to_be_visible()


def test_axe_on_a_phone_finds_no_critical_or_serious_violation(browser: Browser, server: ChatServer) -> None:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    pg = themed_page(browser, server, "light", MOBILE)
    try:
        pg.locator("#welcome-screen [id^=starter-]").first.wait_for(timeout=TIMEOUT)
        found = {"welcome": blocking_violations(pg)}
        pg.locator("#chat-input").fill(QUESTION)
        pg.locator("#chat-submit").click()
        wait_answers(pg, 1)
        pg.locator("a.element-link", has_text="[1]").first.click()
        expect(pg.get_by_test_id("source-panel").first).to_be_visible(timeout=TIMEOUT)
        found["source panel"] = blocking_violations(pg)
        shot(pg, "phone_source_panel")
        assert {scene: lines for scene, lines in found.items() if lines} == {}
    finally:
        pg.context.close()


def test_the_scroll_to_bottom_arrow_has_a_name_from_the_moment_it_shows(desktop: Page) -> None:
    # Chainlit's icon-only arrow shows only while the chat is not at its bottom. It was named a frame after it
    # came, and an axe scan in that frame found a nameless button (a CI run failed so). An observer of the
    # test's own, registered after mindnet's, looks at the arrow in the very task that adds it.
    pg = desktop
    for question in (QUESTION, "Was ist hybride Suche?"):
        pg.locator("#chat-input").fill(question)
        pg.locator("#chat-submit").click()
        wait_answers(pg, 1 if question == QUESTION else 2)
    arrow = pg.locator(".absolute.bottom-4 > button")
    pg.evaluate("""() => { const box = [...document.querySelectorAll('.overflow-y-auto')]
        .find((e) => e.scrollHeight > e.clientHeight + 300); box.scrollTop = box.scrollHeight; }""")
    expect(arrow).to_have_count(0, timeout=TIMEOUT)            # at the bottom: no arrow yet
    pg.evaluate("""() => { window.arrowNamesSeen = [];
        new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes) {
            const b = n.nodeType === 1 && n.querySelector('.absolute.bottom-4 > button, .bottom-4 > button');
            if (b) window.arrowNamesSeen.push(b.getAttribute('aria-label') || '');
        } }).observe(document.body, { childList: true, subtree: true }); }""")
    pg.evaluate("""() => { const box = [...document.querySelectorAll('.overflow-y-auto')]
        .find((e) => e.scrollHeight > e.clientHeight + 300); box.scrollTop -= 300; }""")   # scrolled up a little
    expect(arrow).to_be_visible(timeout=TIMEOUT)
    expect(pg.get_by_role("button", name="Scroll to the latest message", exact=True)).to_be_visible()
    assert pg.evaluate("window.arrowNamesSeen") == ["Scroll to the latest message"]
    assert blocking_violations(pg) == []          # the page while the arrow shows
    arrow.click()
    expect(arrow).to_be_hidden(timeout=TIMEOUT)


# --------------------------------------------------------------------------- the keyboard alone


FOCUSED = "() => { const e = document.activeElement; return e ? e.outerHTML.slice(0, 200) : '' }"


def tab_to(pg: Page, test: str, *, back: bool = False, limit: int = 120) -> None:
    """Press Tab (or Shift+Tab) until the focused element passes `test` (a JS predicate of the element)."""
    check = f"() => {{ const e = document.activeElement; return !!e && ({test})(e); }}"
    for _ in range(limit):
        if pg.evaluate(check):
            return
        pg.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{limit} Tab presses never reached {test}; focus is on {pg.evaluate(FOCUSED)}")


def focus_is(pg: Page, test: str) -> None:
    try:
        pg.wait_for_function(f"() => {{ const e = document.activeElement; return !!e && ({test})(e); }}",
                             timeout=TIMEOUT)
    except PlaywrightError as exc:
        raise AssertionError(f"the focus never reached {test}; it is on {pg.evaluate(FOCUSED)}") from exc


IN_PANEL = "e => !!e.closest('#side-view-content')"
CITATION_2 = "e => e.matches('a.element-link') && e.textContent.trim() === '[2]'"
COMPOSER = "e => e.id === 'chat-input'"


def test_keyboard_alone_asks_opens_a_source_closes_it_rates_and_saves_a_draft(
        desktop: Page, server: ChatServer) -> None:  # noqa: F811
    pg = desktop
    target = server.vault / "projects" / "Kräutergarten.md"
    target.unlink(missing_ok=True)
    answers_before = server.feedback_report()["answers"]["count"]
    tab_to(pg, COMPOSER)
    pg.keyboard.type(QUESTION)
    pg.keyboard.press("Enter")
    wait_answers(pg, 1)

    # a citation [2] of the answer, reached backwards from the composer; Enter opens its source
    tab_to(pg, COMPOSER)
    tab_to(pg, CITATION_2, back=True)
    pg.keyboard.press("Enter")
    focus_is(pg, IN_PANEL)                                       # the focus moved into the panel
    panel = pg.locator("#side-view-content")
    expect(panel.get_by_test_id("source-title").first).to_have_text(re.compile(r"^\[2\] "))
    assert "Score:" in panel.get_by_test_id("source-breakdown").first.inner_text()
    # read on with Tab: the panel's controls come next, the source is rated there too
    tab_to(pg, "e => e.dataset.testid === 'source-up'")
    assert pg.evaluate(f"() => ({IN_PANEL})(document.activeElement)")
    pg.keyboard.press("Enter")
    expect(panel.get_by_test_id("source-up").first).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT)
    focus_is(pg, "e => e.dataset.testid === 'source-up'")          # still there once the panel is drawn anew
    shot(pg, "keyboard_source_panel")
    pg.keyboard.press("Escape")                                  # Esc closes the panel ...
    expect(pg.locator("#side-view-content")).to_have_count(0, timeout=TIMEOUT)
    focus_is(pg, CITATION_2)                                     # ... and the focus is back on [2]

    # the answer's rating, then a draft, still by keyboard
    tab_to(pg, "e => e.textContent.trim() === 'Good answer'")
    pg.keyboard.press("Enter")
    expect(pg.get_by_role("button", name="Good answer ✓")).to_have_count(1, timeout=TIMEOUT)
    assert server.feedback_report()["answers"]["count"] == answers_before + 1
    tab_to(pg, COMPOSER)
    pg.keyboard.type(NEW_NOTE)
    pg.keyboard.press("Enter")
    pg.get_by_test_id("draft-text").wait_for(timeout=TIMEOUT)
    tab_to(pg, "e => e.dataset.testid === 'draft-text'")
    pg.keyboard.press("Control+End")
    pg.keyboard.type("\nMit der Tastatur geschrieben.")
    tab_to(pg, "e => e.dataset.testid === 'draft-save'")
    pg.keyboard.press("Enter")
    expect(pg.get_by_test_id("draft-status").last).to_contain_text("saved to", timeout=TIMEOUT)
    assert target.read_text(encoding="utf-8").rstrip().endswith("Mit der Tastatur geschrieben.")
    shot(pg, "keyboard_draft_saved")


def test_tab_out_of_the_drafts_text_stays_on_the_next_control_once_the_text_is_stored(
        desktop: Page) -> None:
    # leaving the text stores it on the server (draft_update); the editor once also wrote it into its own props,
    # and Chainlit built the element anew from them: the focus fell to the page (and a Save pressed then was lost)
    pg = desktop
    tab_to(pg, COMPOSER)
    pg.keyboard.type(NEW_NOTE)
    pg.keyboard.press("Enter")
    editor_after_the_move(pg)
    tab_to(pg, "e => e.dataset.testid === 'draft-text'")
    pg.keyboard.press("Control+End")
    pg.keyboard.type("\nMit der Tastatur weiter.")
    mounted = pg.evaluate("() => document.documentElement.dataset.mindnetEditorMounted")
    with pg.expect_response(lambda r: r.url.endswith("/project/action"), timeout=TIMEOUT):
        pg.keyboard.press("Tab")                                 # the blur stores the text
    left_to = pg.evaluate(FOCUSED)
    pg.wait_for_timeout(1500)                                    # what the server sent back is drawn by now
    assert pg.evaluate(FOCUSED) == left_to
    assert pg.evaluate("() => !!document.activeElement.closest('[data-testid=draft-editor]')"), left_to
    assert pg.evaluate("() => document.documentElement.dataset.mindnetEditorMounted") == mounted
    pg.get_by_test_id("draft-discard").last.click()
    expect(pg.get_by_text("Draft discarded.").first).to_be_visible(timeout=TIMEOUT)


def test_link_suggestion_reasons_are_text_that_their_buttons_point_at(desktop: Page) -> None:
    pg = desktop
    pg.locator("#chat-input").fill(NEW_NOTE)
    pg.locator("#chat-submit").click()
    suggestion = pg.get_by_test_id("suggestion").first
    expect(suggestion).to_be_visible(timeout=TIMEOUT)
    reason = suggestion.get_by_test_id("suggestion-reason")
    expect(reason).to_be_visible()                               # shown, not a hover tooltip
    expect(reason).to_contain_text("kind: ")
    assert suggestion.locator("[title]").count() == 0
    text = reason.inner_text().strip()
    expect(suggestion.get_by_test_id("suggestion-edge")).to_have_accessible_description(re.compile(re.escape(text)))
    shot(pg, "suggestion_reasons")
    pg.get_by_test_id("draft-discard").last.click()
    expect(pg.get_by_text("Draft discarded.").first).to_be_visible(timeout=TIMEOUT)



def test_on_a_phone_esc_closes_the_sources_dialog_and_gives_the_focus_back_to_the_citation(
        browser: Browser, server: ChatServer) -> None:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    pg = themed_page(browser, server, "light", MOBILE)
    try:
        tab_to(pg, COMPOSER)
        pg.keyboard.type(QUESTION)
        pg.keyboard.press("Enter")
        wait_answers(pg, 1)
        expect(pg).to_have_url(re.compile(r"/ui/thread/[0-9a-f-]{36}$"), timeout=TIMEOUT)   # drawn anew there
        expect(pg.get_by_role("dialog")).to_have_count(0, timeout=TIMEOUT)   # nothing opens by itself on a phone
        tab_to(pg, COMPOSER)
        tab_to(pg, CITATION_2, back=True)
        pg.keyboard.press("Enter")
        dialog = pg.get_by_role("dialog")
        expect(dialog.get_by_test_id("source-title").first).to_have_text(re.compile(r"^\[2\] "), timeout=TIMEOUT)
        focus_is(pg, IN_PANEL)                                   # the focus is in the dialog
        shot(pg, "phone_keyboard_dialog")
        pg.keyboard.press("Escape")
        expect(dialog).to_have_count(0, timeout=TIMEOUT)
        focus_is(pg, CITATION_2)                                 # back on the citation, not on <body>
        shot(pg, "phone_keyboard_dialog_closed")
    finally:
        pg.context.close()
