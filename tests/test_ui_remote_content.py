"""Nothing in a chat answer, a source or a draft preview loads from another machine (issue 27, item 3).

A real `mindnet serve` (fake Ollama, the sample vault plus a note with `![](http://evil.example/pixel.png?from=note)`)
and headless Chromium, in which `evil.example` resolves to a server on 127.0.0.1 that records every request it
gets: the image a prompt injection would use to smuggle note text out. The scripted model repeats every image of
its context in its answer, as a model following such an injection would. The tests read what that server received
(nothing), what the page asked for (only 127.0.0.1) and the Content-Security-Policy violations the page reported.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_ui import DRAFT_REPLY, ChatServer
from playwright.sync_api import Browser, Page, expect, sync_playwright
from test_ui_browser import editor_after_the_move

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
TIMEOUT = 30_000
PIXEL = "http://evil.example/pixel.png?from=note"
PIXEL_NOTE = f"""---
title: Holunderhof
type: concept
---
# Holunderhof

Der Holunder im Hinterhof blüht im Juni, die Dolden riechen nach Honig. ![]({PIXEL})
Ein Film vom Hof: ![Film](http://evil.example/clip.mp4?from=note)
"""
QUESTION = "Wann blüht der Holunder im Hinterhof?"
DRAFT_IMAGE = "http://evil.example/pixel.png?from=draft"
DRAFT_WITH_IMAGE = DRAFT_REPLY.replace("Basilikum und Minze in Kästen.",
                                       f"Basilikum und Minze in Kästen.\n\n![Balkon]({DRAFT_IMAGE})")
IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\s]+\)")


def echoing_model(messages: list[dict[str, Any]]) -> str:
    """The router says FACT, the interview gets a note with an image, an answer repeats its context's images."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if "Du bist der Router" in text:
        return "FACT"
    if "Interview" in text:
        return DRAFT_WITH_IMAGE
    return "Der Holunder blüht im Juni [1]. " + " ".join(dict.fromkeys(IMAGE.findall(text)))


class Evil:
    """An HTTP server on 127.0.0.1 standing in for evil.example: records each request's path."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class DocsServer(ChatServer):
    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "MINDNET_API_DOCS": "true"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = DocsServer(tmp_path_factory.mktemp("ui_remote"))
    srv.ollama.chat_fn = echoing_model
    srv.start(extra_notes={"Holunderhof.md": PIXEL_NOTE})
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def evil() -> Iterator[Evil]:
    e = Evil()
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def browser(evil: Evil) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", f"--host-resolver-rules=MAP evil.example 127.0.0.1:{evil.port}"]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page with what it asked for (requests that got an answer) and the policy violations it reported."""

    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        # before any script of the page: every violation of its Content-Security-Policy is noted
        self.context.add_init_script("""window.__violations = [];
            document.addEventListener('securitypolicyviolation', e => window.__violations.push(
                {blocked: e.blockedURI, directive: e.effectiveDirective}));""")
        self.page = self.context.new_page()
        self.fetched: list[str] = []
        self.page.on("response", lambda r: self.fetched.append(r.url))

    def violations(self) -> list[dict[str, str]]:
        return self.page.evaluate("window.__violations")

    def remote(self) -> list[str]:
        return sorted({u for u in self.fetched if not u.startswith(("http://127.0.0.1:", "data:", "blob:"))})


@pytest.fixture
def watched(browser: Browser, server: ChatServer) -> Iterator[Watched]:
    w = Watched(browser)
    w.page.goto(f"{server.url}/ui", wait_until="domcontentloaded")
    w.page.locator("#chat-settings-open-modal").wait_for(timeout=TIMEOUT)     # the socket is up
    yield w
    w.context.close()


def ask(page: Page, text: str) -> None:
    rated = page.get_by_role("button", name="Good answer")
    before = rated.count()
    composer = page.locator("#chat-input")
    composer.click()
    composer.fill(text)
    page.locator("#chat-submit").click()
    expect(rated).to_have_count(before + 1, timeout=TIMEOUT)
    page.locator("#stop-button").wait_for(state="detached", timeout=TIMEOUT)


def test_a_remote_image_in_a_note_and_the_answer_is_a_link_never_fetched(watched: Watched, evil: Evil) -> None:
    page = watched.page
    ask(page, QUESTION)
    answer = page.locator(".step").filter(has=page.get_by_role("button", name="Good answer")).last
    expect(answer).to_contain_text("Der Holunder blüht im Juni")
    page.wait_for_load_state("networkidle")
    assert evil.hits == []                                         # the stand-in heard nothing
    assert answer.locator(".message-content").locator("img, video").count() == 0
    # the only picture beside it is the answer's avatar, inline (data:), never fetched from anywhere
    assert all(src.startswith("data:") for src in answer.locator("img").evaluate_all("els => els.map(e => e.src)"))
    link = answer.get_by_role("link", name="image", exact=True)
    expect(link).to_have_attribute("href", PIXEL)                 # a plain link: loaded only if clicked
    expect(answer.get_by_role("link", name="image: Film")).to_have_attribute("href", re.compile("clip.mp4"))
    # the note's own panel shows the image syntax as text
    answer.locator("li", has_text="Holunderhof").locator("a.element-link").first.click()
    panel = page.get_by_test_id("source-panel").filter(has_text="Holunderhof").first
    expect(panel.get_by_test_id("source-text")).to_contain_text(f"![]({PIXEL})")
    assert panel.locator("img, video").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_19_remote_image_as_link.png"))
    page.reload(wait_until="networkidle")                          # what the page asked for, to the end
    assert (evil.hits, watched.remote()) == ([], [])
    assert watched.violations() == []                              # the chat itself runs under its policy


def test_the_policy_is_sent_and_blocks_a_remote_image(watched: Watched, server: ChatServer, evil: Evil) -> None:
    policy = httpx.get(f"{server.url}/ui", timeout=30).headers.get("content-security-policy", "")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["img-src"] == "'self' data: blob:" and directives["default-src"] == "'self'"
    assert "unsafe-inline" not in directives["script-src"] and "*" not in policy
    api = httpx.get(f"{server.url}/health", timeout=30).headers["content-security-policy"]
    assert api.startswith("default-src 'none'")
    page = watched.page
    page.evaluate("""() => { const img = new Image(); img.src = 'http://evil.example/pixel.png?from=csp';
                             document.body.appendChild(img); }""")
    page.wait_for_function("window.__violations.some(v => v.blocked.includes('evil.example'))", timeout=TIMEOUT)
    assert [v["directive"] for v in watched.violations()] == ["img-src"]
    assert (evil.hits, watched.remote()) == ([], [])


def test_the_draft_preview_shows_images_as_links(watched: Watched, evil: Evil) -> None:
    page = watched.page
    ask(page, "Neues Projekt anlegen: Kräutergarten auf dem Balkon")
    editor_after_the_move(page)                              # not the button of the editor being drawn anew
    page.get_by_test_id("draft-preview-toggle").last.click()
    preview = page.get_by_test_id("draft-preview").last
    expect(preview).to_contain_text("Basilikum und Minze in Kästen.")
    expect(preview.get_by_role("link", name="image: Balkon")).to_have_attribute("href", DRAFT_IMAGE)
    assert preview.locator("img, video").count() == 0
    expect(page.get_by_test_id("draft-preview-meta").last).to_contain_text("title: Kräutergarten")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_20_draft_preview.png"))
    page.get_by_test_id("draft-preview-toggle").last.click()       # back to the text, unchanged
    assert f"![Balkon]({DRAFT_IMAGE})" in page.get_by_test_id("draft-text").last.input_value()
    page.get_by_test_id("draft-discard").last.click()
    assert (evil.hits, watched.remote(), watched.violations()) == ([], [], [])


REDOC_LOGO = {"blocked": "https://cdn.redoc.ly/redoc/logo-mini.svg", "directive": "img-src"}


@pytest.mark.parametrize(("path", "ready", "blocked"), [
    ("/docs", ".swagger-ui .title", []),
    ("/redoc", "h1", [REDOC_LOGO]),       # ReDoc always shows its maker's logo from a CDN: the policy blocks it
])
def test_api_docs_are_served_from_this_machine(browser: Browser, server: ChatServer, evil: Evil, path: str,
                                               ready: str, blocked: list[dict[str, str]]) -> None:
    w = Watched(browser)
    try:
        w.page.goto(f"{server.url}{path}", wait_until="domcontentloaded")
        expect(w.page.locator(ready).first).to_contain_text("mindnet", timeout=TIMEOUT)
        w.page.wait_for_load_state("networkidle")
        assert (evil.hits, w.remote(), w.violations()) == ([], [], blocked)
    finally:
        w.context.close()


def test_the_evil_stand_in_really_answers(browser: Browser, evil: Evil) -> None:
    """The check of the checks (last in the module: the browser may also ask the stand-in for a favicon): without
    mindnet's page in the way, the browser does reach the stand-in."""
    w = Watched(browser)
    try:
        w.page.goto("http://evil.example/pixel.png?from=check", wait_until="load")
        assert "/pixel.png?from=check" in evil.hits
    finally:
        w.context.close()
