"""Conversations that come back whole, in headless Chromium against a real `mindnet serve` (fake Ollama): each
thread has its own URL, a reload or the link in another window reopens it with its source panels, "why", rating
buttons (and the ratings given) and its draft editor, and threads are named by topic, never by a button's action.
Screenshots: test-artifacts/ui_resume_*.png.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from helpers_ui import ANSWER, ChatServer
from playwright.sync_api import Browser, Page, expect
from test_ui_browser import (  # noqa: F401
    ARTIFACTS,
    DESKTOP,
    MOBILE,
    TIMEOUT,
    ask,
    browser,
    editor_after_the_move,
    last_answer,
    open_page,
)

from mindnet.logs import GENERATED_ANSWER
from mindnet.ui.resume import DRAFT_KEY, TURN_KEY, latest_ratings, thread_title

pytestmark = pytest.mark.browser

THREAD_URL = re.compile(r"/ui/thread/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
QUESTION = "Warum habe ich Qdrant gewählt?"
NEW_NOTE = "Neues Projekt anlegen: Kräutergarten auf dem Balkon"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_resume")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def page(browser: Browser, server: ChatServer) -> Iterator[Page]:  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    pg = open_page(browser, server, DESKTOP)
    yield pg
    pg.context.close()


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"ui_resume_{name}.png"))


def stored_threads(server: ChatServer) -> list[dict[str, Any]]:
    """The threads in the server's data/threads.sqlite, with their steps' metadata."""
    with sqlite3.connect(server.root / "threads.sqlite") as db:
        db.row_factory = sqlite3.Row
        threads = [dict(r) for r in db.execute('SELECT "id", "name", "userId" FROM threads')]
        for t in threads:
            t["steps"] = [json.loads(r[0] or "{}") for r in
                          db.execute('SELECT "metadata" FROM steps WHERE "threadId" = ?', (t["id"],))]
    return threads


def wait_for_store(server: ChatServer, found: Any, what: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Wait until the thread store holds what `found(threads)` looks for (writes run after the screen shows)."""
    deadline = time.monotonic() + timeout
    while True:
        threads = stored_threads(server)
        if found(threads):
            return threads
        if time.monotonic() > deadline:
            raise AssertionError(f"the thread store never held {what}: {threads}")
        time.sleep(0.2)


def thread_id(pg: Page) -> str:
    expect(pg).to_have_url(THREAD_URL, timeout=TIMEOUT)
    return pg.url.rsplit("/", 1)[-1]


def reopen(pg: Page, url: str) -> None:
    pg.goto(url, wait_until="domcontentloaded")
    pg.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)   # sent by on_chat_resume


# --------------------------------------------------------------------------- URL, panels, ratings


def test_a_reload_reopens_the_thread_with_its_sources_why_and_ratings(page: Page, server: ChatServer) -> None:
    ask(page, QUESTION)
    tid = thread_id(page)                                     # the address is the thread's own, at once
    top = re.search(r"\[1\] (.+?)(?: \(.*\))? · ", last_answer(page).inner_text())   # the top source's title
    assert top, last_answer(page).inner_text()
    wait_for_store(server, lambda ts: any(t["id"] == tid and any(TURN_KEY in s for s in t["steps"]) for t in ts),
                   "the answer's sources")
    page.reload(wait_until="domcontentloaded")
    page.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)
    expect(page).to_have_url(THREAD_URL)
    expect(page.get_by_text(QUESTION, exact=True).first).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(ANSWER[:30], exact=False)).to_have_count(1, timeout=TIMEOUT)
    page.locator("a.element-link", has_text="[1]").first.click()      # "[1]" links its source again
    panel = page.get_by_test_id("source-panel").first
    expect(panel.get_by_test_id("source-title")).to_have_text(re.compile(r"^\[1\] "), timeout=TIMEOUT)
    expect(panel.get_by_test_id("source-why")).to_contain_text("Why this source")
    assert re.search(r"semantic [\d.]+ \+ links [\d.]+ \+ centrality [\d.]+ = [\d.]+",
                     panel.get_by_test_id("source-breakdown").inner_text())
    panel.get_by_test_id("source-up").click()
    expect(panel.get_by_test_id("source-up")).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT)
    page.get_by_role("button", name="Good answer").click()            # the rating buttons work again
    expect(page.get_by_role("button", name="Good answer ✓")).to_have_count(1, timeout=TIMEOUT)
    shot(page, "01_reloaded_thread")
    assert server.feedback_report()["answers"]["count"] == 1

    page.reload(wait_until="domcontentloaded")                        # the ratings given come back too
    page.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Good answer ✓")).to_have_count(1, timeout=TIMEOUT)
    page.locator("a.element-link", has_text="[1]").first.click()
    expect(page.get_by_test_id("source-up").first).to_have_attribute("aria-pressed", "true", timeout=TIMEOUT)
    named = wait_for_store(server, lambda ts: any(t["id"] == tid and t["name"] for t in ts), "a name")
    assert [t["name"] for t in named if t["id"] == tid] == [top.group(1)]      # named by its topic: the top source


def test_the_link_opens_the_thread_in_another_window_and_on_a_phone(browser: Browser,  # noqa: F811
                                                                     server: ChatServer) -> None:
    first = open_page(browser, server, DESKTOP)
    ask(first, "Was ist hybride Suche?")
    url = first.url if THREAD_URL.search(first.url) else ""
    assert url, first.url
    first.context.close()
    for name, viewport in (("02_link_desktop", DESKTOP), ("03_link_phone", MOBILE)):
        pg = open_page(browser, server, viewport)        # another window, logged in (the local user)
        reopen(pg, url)
        expect(pg.get_by_text("Was ist hybride Suche?", exact=True).first).to_be_visible(timeout=TIMEOUT)
        expect(pg.get_by_role("button", name="Good answer")).to_have_count(1, timeout=TIMEOUT)
        pg.locator("a.element-link", has_text="[1]").first.click()
        expect(pg.get_by_test_id("source-panel").first).to_be_visible(timeout=TIMEOUT)
        shot(pg, name)
        pg.context.close()


# --------------------------------------------------------------------------- drafts and names


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_a_reopened_interview_thread_shows_the_draft_editor_with_its_text(browser: Browser,  # noqa: F811
                                                                         server: ChatServer, device: str) -> None:
    typed = "Zitronenverbene nicht vergessen"
    viewport = DESKTOP if device == "desktop" else MOBILE
    pg = open_page(browser, server, viewport)
    ask(pg, NEW_NOTE)
    tid = thread_id(pg)
    editor = editor_after_the_move(pg)
    editor.focus()
    editor.press("Control+End")
    editor.press_sequentially("\n" + typed)
    pg.get_by_text(NEW_NOTE, exact=True).first.click()               # leave the editor: its text is sent
    wait_for_store(server, lambda ts: any(t["id"] == tid and any(
        (s.get(DRAFT_KEY) or {}).get("markdown", "").rstrip().endswith(typed) for s in t["steps"]) for t in ts),
        "the typed text")
    url = pg.url
    pg.context.close()

    other = open_page(browser, server, viewport)       # another window: nothing of the draft kept in the browser
    reopen(other, url)
    restored = other.get_by_test_id("draft-text").last
    expect(restored).to_have_value(re.compile(typed + r"\s*$"), timeout=TIMEOUT)
    expect(other.get_by_test_id("draft-save").last).to_be_enabled()
    box = restored.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], box     # within the screen
    shot(other, f"04_draft_thread_reopened_{device}")
    other.get_by_test_id("draft-discard").last.click()
    expect(other.get_by_text("Draft discarded.").first).to_be_visible(timeout=TIMEOUT)
    wait_for_store(server, lambda ts: any(t["id"] == tid and any(
        (s.get(DRAFT_KEY) or {}).get("status") == "discarded" for s in t["steps"]) for t in ts), "the discard")
    reopen(other, url)                                               # discarded stays discarded
    expect(other.get_by_test_id("draft-status").last).to_contain_text("discarded", timeout=TIMEOUT)
    other.context.close()


def typing_salbei(page: Page) -> str:
    """A new note's draft, "Salbei" typed at the end of its text (the editor has the focus): the thread's id."""
    ask(page, NEW_NOTE)
    tid = thread_id(page)
    editor = editor_after_the_move(page)
    editor.focus()
    editor.press("Control+End")
    editor.press_sequentially("\nSalbei")
    return tid


def draw_again(page: Page, tid: str) -> None:
    """The move from the chat's first URL to the thread's, as the page script makes it: Chainlit draws the page,
    the draft editor included, anew."""
    page.evaluate("""(tid) => {
        history.replaceState(history.state, "", "/ui/");
        window.dispatchEvent(new PopStateEvent("popstate", { state: history.state }));
        window.postMessage({ mindnet: "thread", thread_id: tid }, location.origin);
    }""", tid)


@contextmanager
def cpu_slowed(page: Page, rate: int) -> Iterator[None]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
    try:
        yield
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})


def typed_after_salbei(page: Page) -> str:
    text = page.get_by_test_id("draft-text").last.input_value()
    typed = re.search(r"\nSalbei(.*)$", text, re.S)
    assert typed, text[-60:]
    return typed.group(1).rstrip("\n")


def test_typing_in_the_draft_editor_goes_on_where_it_was_when_the_page_is_drawn_again(page: Page) -> None:
    # after the first answer the page moves to the thread's URL and Chainlit draws it again, editor included:
    # keys typed then went to the start of the text (loaded CI of stop 38), or nowhere
    tid = typing_salbei(page)
    draw_again(page, tid)
    editor = editor_after_the_move(page)
    expect(editor).to_be_focused(timeout=TIMEOUT)       # given back (the chat's input took it as the page was drawn)
    page.keyboard.type(" und Thymian")                 # no click first: the keys go where the focus is
    expect(page.get_by_test_id("draft-text").last).to_have_value(re.compile(r"\nSalbei und Thymian\s*$"),
                                                                  timeout=TIMEOUT)


def test_keys_typed_while_the_editor_is_drawn_again_go_into_the_draft_not_the_chat(page: Page) -> None:
    # between the editor leaving the page (the move to the thread's URL) and its new copy taking the focus back,
    # the chat's input has it (its autofocus): keys typed then went into the chat's input
    tid = typing_salbei(page)
    with cpu_slowed(page, 6):                             # a slow machine: the drawing takes a while
        draw_again(page, tid)
        page.keyboard.type(" und Thymian")                 # at once, as the page is drawn again
    editor_after_the_move(page)
    expect(page.get_by_test_id("draft-text").last).to_have_value(re.compile(r"\nSalbei und Thymian\s*$"),
                                                                  timeout=TIMEOUT)
    expect(page.locator("#chat-input")).to_have_text("")


def test_a_key_typed_right_after_the_held_keys_reach_the_new_editor_comes_after_them(page: Page) -> None:
    # the held keys went into the new editor's state only, not its text area: a key typed before React drew that
    # went on from the old text, and the held keys were gone (CI of stop 40: " und Th" lost, "ymian" kept).
    # Here a key comes in the very frame the held keys were given to the editor (a real text insertion, as a
    # key makes it, from the page: Playwright cannot type inside one frame).
    tid = typing_salbei(page)
    page.evaluate("""() => {
        const raf = window.requestAnimationFrame.bind(window);
        window.requestAnimationFrame = (callback) => raf((t) => {
            const held = window.mindnetDraftKeys;
            callback(t);
            const area = document.activeElement;
            if (held && held.keys.length && !window.mindnetDraftKeys && !window.keyAfterTheHeld &&
                area && area.dataset.testid === "draft-text") {
                window.keyAfterTheHeld = area.value;          // what the text area had, the held keys given
                document.execCommand("insertText", false, "!");
            }
        });
    }""")
    with cpu_slowed(page, 6):
        draw_again(page, tid)
        page.wait_for_function("() => !!window.mindnetDraftKeys", timeout=TIMEOUT)   # the editor left the page
        page.keyboard.type(" und")                                                  # held for its new copy
    editor_after_the_move(page)
    page.wait_for_function("() => window.keyAfterTheHeld !== undefined", timeout=TIMEOUT)
    page.keyboard.type(" Thymian")
    expect(page.get_by_test_id("draft-text").last).to_have_value(re.compile(r"Thymian\s*$"), timeout=TIMEOUT)
    # the keys held till then (the first of " und", or all: on a busy machine the new copy may come sooner) were in
    # the text area when the "!" came, so it follows them; none is lost
    given = page.evaluate("() => window.keyAfterTheHeld").split("\nSalbei", 1)[1]
    assert given and " und".startswith(given), given
    assert typed_after_salbei(page) == given + "!" + " und"[len(given):] + " Thymian"


def press_while_drawn_again(page: Page, tid: str, control: str) -> dict[str, float]:
    """The mouse pressed on the draft editor's `control`, then the editor drawn anew (a new copy is on the page
    when this returns, the mouse still down): the control's box as it was pressed."""
    box = page.get_by_test_id(control).last.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    before = page.evaluate("() => performance.now()")
    draw_again(page, tid)
    page.wait_for_function("(t) => +document.documentElement.dataset.mindnetEditorMounted > t", arg=before,
                           timeout=TIMEOUT)
    return box


def test_save_pressed_before_the_editor_is_drawn_again_and_released_after_saves(page: Page, server: ChatServer) -> None:
    # the press lands on one copy of the editor, the release on the next: the browser gives no click (a Save lost
    # when an answer ended or a status came in between, loaded CI of stop 41)
    target = server.vault / "projects" / "Kräutergarten.md"
    target.unlink(missing_ok=True)
    press_while_drawn_again(page, typing_salbei(page), "draft-save")
    page.mouse.up()
    expect(page.get_by_test_id("draft-status").last).to_contain_text("saved to", timeout=TIMEOUT)
    assert "Salbei" in target.read_text(encoding="utf-8")
    target.unlink()


def test_a_press_released_elsewhere_after_the_editor_is_drawn_again_clicks_nothing(page: Page) -> None:
    tid = typing_salbei(page)
    actions: list[str] = []
    page.on("request", lambda r: r.url.endswith("/project/action") and actions.append(r.post_data or ""))
    box = press_while_drawn_again(page, tid, "draft-discard")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] - 200)                 # dragged away: no click meant
    page.mouse.up()
    # a click would have been given in a task right after the release, its request sent at once
    page.evaluate("() => new Promise((done) => setTimeout(() => setTimeout(done, 0), 0))")
    assert not [a for a in actions if '"draft_discard"' in a], actions           # not discarded
    expect(page.get_by_test_id("draft-text").last).to_have_value(re.compile(r"\nSalbei\s*$"))


def test_on_a_very_slow_page_no_key_typed_while_the_editor_is_drawn_again_is_lost(page: Page) -> None:
    # so slow that the new editor may come after the keys stopped waiting for it (4 s): those are typed into the
    # chat's input, which has the focus then; the keys before and after went into the editor. None is lost.
    tid = typing_salbei(page)
    with cpu_slowed(page, 30):
        draw_again(page, tid)
        page.keyboard.type(" und Thymian", delay=250)
    editor_after_the_move(page)
    page.wait_for_function("() => !window.mindnetDraftKeys", timeout=TIMEOUT)     # none held any more
    # each key once, in the editor or the chat's input (which of the two got which depends on the timing)
    got = typed_after_salbei(page) + page.locator("#chat-input").input_value()
    assert sorted(got) == sorted(" und Thymian"), got


def test_a_restored_draft_names_its_thread_by_the_note_not_by_an_action(browser: Browser,  # noqa: F811
                                                                        server: ChatServer) -> None:
    pg = open_page(browser, server, DESKTOP)
    ask(pg, NEW_NOTE)
    editor = editor_after_the_move(pg)
    editor.focus()
    editor.press("Control+End")
    editor.press_sequentially("\nSalbei")                          # kept in this browser
    # the first thread's name is stored after the answer shows: wait for it (a state) before leaving the page
    wait_for_store(server, lambda ts: any(t["name"] == "New note: Kräutergarten" for t in ts),
                   "the first thread's name")
    pg.goto(f"{server.url}/ui/", wait_until="domcontentloaded")     # a new chat: the draft is handed back
    expect(pg.get_by_text("Restored your unsaved draft", exact=False).first).to_be_visible(timeout=TIMEOUT)
    pg.get_by_test_id("draft-text").last.press_sequentially(" und Thymian")   # its first action starts the thread
    wait_for_store(server, lambda ts: any(t["name"] == "New note: Kräutergarten" and t["userId"] for t in ts),
                   "the restored draft's thread")
    pg.reload(wait_until="domcontentloaded")
    listed = pg.locator('a[href*="/thread/"]')
    expect(listed.first).to_be_visible(timeout=TIMEOUT)
    names = listed.all_inner_texts()
    shot(pg, "05_thread_list")
    assert any("New note: Kräutergarten" in n for n in names), names
    assert not any(n.strip().startswith(NEW_NOTE[:20]) for n in names), names    # not the question itself
    assert all("draft_" not in n for n in names), names
    assert all(not (t["name"] or "").startswith("draft_") for t in stored_threads(server))
    pg.get_by_test_id("draft-discard").last.click()
    pg.context.close()


# --------------------------------------------------------------------------- the pieces, without a browser


@pytest.mark.parametrize(("question", "sources", "draft", "title"), [
    ("Warum habe ich Qdrant gewählt?", [{"title": "Qdrant statt Chroma"}, {"title": "B"}], None,
     "Qdrant statt Chroma"),
    ("Neues Projekt anlegen", [{"title": "A"}], {"title": "Kräutergarten"}, "New note: Kräutergarten"),
    ("Was ist das hier eigentlich für eine sehr lange Frage ohne jede Quelle im Tresor?", [], None,
     "Was ist das hier eigentlich für eine sehr lange Frage ohne…"),
    ("?", [], None, "Conversation"),
])
def test_thread_title_is_the_topic(question: str, sources: list[dict[str, Any]], draft: dict[str, Any] | None,
                                   title: str) -> None:
    assert thread_title(question, sources, draft) == title


def test_latest_ratings_keep_the_last_score_of_the_thread_s_searches() -> None:
    records = [{"query_id": "q1", "node_id": GENERATED_ANSWER, "score": 5}, {"query_id": "q1", "score": 1},
               {"query_id": "q1", "node_id": "n1", "score": 5}, {"query_id": "q2", "node_id": "n1", "score": 1},
               {"query_id": "q1", "node_id": "n2", "score": "bad"}]
    assert latest_ratings(records, {"q1"}) == {("q1", GENERATED_ANSWER): 1, ("q1", "n1"): 5}
