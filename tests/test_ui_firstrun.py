"""The first run in headless Chromium: `mindnet serve` on a vault never imported (the sample vault plus 141
generated notes, 173 in all) imports it by itself. While it runs, every page shows the import strip (notes
written, texts embedded of the total, texts/s, time left), the welcome says how far the import is, and an answer
says what it searched and never that the notes hold nothing; the strip goes when phase 2 ends, and a re-import
of the watcher shows in it with a link that opens the note.

The fake Ollama embeds the generated notes' texts only up to a limit the test raises (`HeldEmbedding`), so the
import stands still where the test looks at it, whatever the machine's speed. Screenshots: test-artifacts/.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_ollama import hashed_embedding
from helpers_ui import FreshVaultServer, generated_notes
from playwright.sync_api import Browser, Page, expect
from test_ui_browser import ARTIFACTS, DESKTOP, MOBILE, REQUESTS, TIMEOUT, ask, browser, last_answer

__all__ = ["browser"]     # the module's browser fixture
pytestmark = pytest.mark.browser

GENERATED = 141
MARK = "Gartenarbeit"       # in every text of a generated note
NOTHING = "Dazu steht nichts in deinen Notizen."


class HeldEmbedding:
    """The fake Ollama's embedding of the generated notes' texts: the first `fast` at once, then one every
    `slow` seconds per call in flight, and from the `cap`-th on none until the test raises the cap (`raise_cap`)
    or lets all through (`release()`): so the import runs, visibly, and stands still where the test looks at it,
    whatever the machine's speed."""

    def __init__(self, dim: int, *, fast: int = 30, cap: int = 40, slow: float = 0.5) -> None:
        assert cap + 80 < GENERATED, "the import must stand at the cap, also once raised by 80, until released"
        self.dim, self.fast, self.cap, self.slow = dim, fast, cap, slow
        self.started = 0
        self._cv = threading.Condition()

    def __call__(self, text: str) -> list[float]:
        if MARK in text:
            with self._cv:
                self.started += 1
                n = self.started
            if n > self.fast:
                time.sleep(self.slow)
            with self._cv:
                self._cv.wait_for(lambda: n <= self.cap, timeout=240)
        return hashed_embedding(text, self.dim)

    def raise_cap(self, by: int) -> None:
        with self._cv:
            self.cap += by
            self._cv.notify_all()

    def release(self) -> None:
        self.raise_cap(10**9)


def chat_reply(messages: list[dict[str, Any]]) -> str:
    """The router says FACT; an answer says the prompt's "nothing in your notes" sentence, as a model that
    found nothing fitting would."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    return "FACT" if "Du bist der Router" in text else f"{NOTHING} Allgemein gilt: Kompost braucht Zeit."


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshVaultServer]:
    ARTIFACTS.mkdir(exist_ok=True)
    srv = FreshVaultServer(tmp_path_factory.mktemp("ui_firstrun"))
    srv.held = HeldEmbedding(srv.ollama.dim)             # type: ignore[attr-defined]
    srv.ollama.embed_fn = srv.held                        # type: ignore[attr-defined]
    srv.ollama.chat_fn = chat_reply
    srv.start(extra_notes=generated_notes(GENERATED))
    try:
        yield srv
    finally:
        srv.held.release()                                # type: ignore[attr-defined]
        srv.stop()


def open_page(browser: Browser, server: FreshVaultServer, viewport: dict[str, int]) -> Page:
    """test_ui_browser's open_page with more time for the chat session to start: the import runs beside it."""
    pg = browser.new_context(viewport=viewport).new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.on("request", lambda r: REQUESTS.append(r.url))
    pg.goto(f"{server.url}/", wait_until="domcontentloaded", timeout=3 * TIMEOUT)
    pg.locator("#chat-settings-open-modal").wait_for(timeout=3 * TIMEOUT)   # sent by on_chat_start
    return pg


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"ui_firstrun_{name}.png"))


def strip_of(pg: Page):
    return pg.locator("#mindnet-import-strip")


def embedded(pg: Page) -> tuple[int, int]:
    text = strip_of(pg).inner_text()
    m = re.search(r"(\d+) of (\d+) texts embedded", text)
    assert m, text
    return int(m[1]), int(m[2])


# --------------------------------------------------------------------------- during the import


def test_strip_shows_the_running_import_on_the_welcome_page_and_after_a_reload(
        browser: Browser, fresh: FreshVaultServer) -> None:
    pg = open_page(browser, fresh, DESKTOP)
    strip = strip_of(pg)
    expect(strip).to_be_visible(timeout=TIMEOUT)
    expect(strip).to_contain_text("Importing your vault", timeout=TIMEOUT)
    # phase 2 slows down after 30 texts of the generated notes: the strip counts texts embedded of the total
    expect(strip).to_contain_text(re.compile(r"all \d+ notes written · \d+ of \d+ texts embedded"), timeout=TIMEOUT)
    expect(strip).to_contain_text(re.compile(r"\d+(\.\d)? texts/s"), timeout=TIMEOUT)
    expect(strip).to_contain_text(re.compile(r"about \d+ (s|min|\.\d h) left"), timeout=TIMEOUT)
    done, total = embedded(pg)
    assert 0 < done < total, (done, total)
    box = strip.bounding_box()
    sidebar_button = pg.locator("#root .fixed.inset-y-0").first.bounding_box()   # the thread sidebar
    assert box and sidebar_button and sidebar_button["y"] >= box["y"] + box["height"], (box, sidebar_button)
    assert pg.evaluate("document.documentElement.scrollHeight") <= DESKTOP["height"]
    shot(pg, "01_strip_welcome")
    pg.reload(wait_until="domcontentloaded")
    pg.locator("#chat-settings-open-modal").wait_for(timeout=3 * TIMEOUT)
    expect(strip).to_be_visible(timeout=TIMEOUT)
    welcome = pg.locator("#welcome-screen")
    expect(welcome).to_contain_text(re.compile(r"importing: (\d+ of \d+|all \d+) notes read"))
    assert "not imported yet" not in welcome.inner_text()
    assert not re.search(r"has read the \d+ notes", welcome.inner_text()), welcome.inner_text()
    assert welcome.locator("#starter-import-now").count() == 0      # no "Import now" while it runs
    # the strip is more than a static line: it counts on. The import may stand at the cap by now (on a busy
    # machine the steps above take longer than reaching it), so let enough texts through that at least one
    # batch of every call in flight can end (5 calls x 16 texts).
    fresh.held.raise_cap(80)                              # type: ignore[attr-defined]
    pg.wait_for_function("(n) => { const m = (document.getElementById('mindnet-import-strip') || {}).textContent"
                         "?.match(/(\\d+) of \\d+ texts embedded/); return m && +m[1] > n; }", arg=done,
                         timeout=TIMEOUT)
    shot(pg, "02_strip_after_reload")
    pg.context.close()


def test_strip_sits_above_the_chat_on_a_phone(browser: Browser, fresh: FreshVaultServer) -> None:
    pg = open_page(browser, fresh, MOBILE)
    strip = strip_of(pg)
    expect(strip).to_be_visible(timeout=TIMEOUT)
    box = strip.bounding_box()
    assert box and box["y"] == 0 and box["width"] == MOBILE["width"], box
    composer = pg.locator("#chat-input").bounding_box()
    settings = pg.locator("#chat-settings-open-modal").bounding_box()
    assert composer and composer["y"] >= box["y"] + box["height"], (box, composer)     # covers nothing
    assert settings and settings["y"] + settings["height"] <= MOBILE["height"], settings
    readme = pg.get_by_text("Readme", exact=True).first.bounding_box()     # the header moved below the strip
    assert readme and readme["y"] >= box["y"] + box["height"], (box, readme)
    assert pg.evaluate("document.documentElement.scrollHeight") <= MOBILE["height"]   # and nothing off screen
    shot(pg, "03_strip_phone")
    pg.context.close()


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_answer_during_the_import_says_what_it_searched_and_never_nothing_in_your_notes(
        browser: Browser, fresh: FreshVaultServer, device: str) -> None:
    assert fresh.health()["import"]["phase"] == "embedding"      # held: the import is still running
    pg = open_page(browser, fresh, DESKTOP if device == "desktop" else MOBILE)
    ask(pg, "Was weiß ich über Kompost und Beete?")
    answer = last_answer(pg)
    expect(answer).to_contain_text(re.compile(r"Searched (all \d+ notes|\d+ of \d+ notes), by keywords and links"))
    expect(answer).to_contain_text("still reading your notes")
    expect(answer).to_contain_text("In den bisher gelesenen Notizen")
    assert NOTHING not in answer.inner_text(), answer.inner_text()
    shot(pg, f"04_answer_during_import_{device}")
    pg.context.close()


# --------------------------------------------------------------------------- after it


def test_strip_goes_when_the_embedding_has_ended_and_answers_say_nothing_of_it(
        browser: Browser, fresh: FreshVaultServer) -> None:
    pg = open_page(browser, fresh, DESKTOP)
    expect(strip_of(pg)).to_be_visible(timeout=TIMEOUT)
    fresh.held.release()                                   # type: ignore[attr-defined]
    expect(strip_of(pg)).to_be_hidden(timeout=TIMEOUT)
    health = fresh.health()["import"]
    assert health["phase"] == "done" and health["texts_missing"] == 0, health
    ask(pg, "Was weiß ich über Kompost und Beete?")
    answer = last_answer(pg)
    expect(answer).to_contain_text("Sources")
    assert "Searched" not in answer.inner_text() and "still reading" not in answer.inner_text()
    shot(pg, "05_after_import")
    pg.context.close()


@pytest.mark.parametrize(("device", "name"), [("desktop", "bm25"), ("phone", "qdrant")])
def test_a_watcher_reimport_shows_in_the_strip_with_a_link_to_the_note(
        browser: Browser, fresh: FreshVaultServer, device: str, name: str) -> None:
    fresh.held.release()                                   # type: ignore[attr-defined]
    pg = open_page(browser, fresh, DESKTOP if device == "desktop" else MOBILE)
    note = Path(fresh.vault) / "concepts" / f"{name}.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n\nNachtrag: BM25 gewichtet seltene Wörter.\n",
                    encoding="utf-8")
    strip = strip_of(pg)
    expect(strip).to_contain_text(re.compile(rf"re-imported '{name}' \d+ s ago"), timeout=TIMEOUT)
    link = strip.get_by_role("link", name="open")
    expect(link).to_be_visible()
    href = link.get_attribute("href") or ""
    assert href == f"{fresh.url}/open?path=concepts%2F{name}.md", href
    r = httpx.get(href, follow_redirects=False, timeout=30)
    assert r.status_code == 307 and r.headers["location"].startswith("obsidian://open?"), r.headers
    shot(pg, f"06_reimported_{device}")
    pg.context.close()


def test_no_request_left_this_machine(fresh: FreshVaultServer) -> None:
    assert REQUESTS, "no page was loaded"
    outside = sorted({u for u in REQUESTS if not re.match(r"^(https?|wss?)://127\.0\.0\.1[:/]", u)
                      and not u.startswith(("data:", "blob:"))})
    assert not outside, outside
