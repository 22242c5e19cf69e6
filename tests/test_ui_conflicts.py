"""Save conflicts and /suggest in the chat, end to end in headless Chromium against a real `mindnet serve` (copy of
the sample vault, fake Ollama): the diff of a draft against the note in the vault, Replace and Merge (each with a
backup), a note changed since the conflict refused; `/suggest NOTE` typed in one go, each reason once, Apply with a
diff preview, Undo. Screenshots: test-artifacts/ui_conflicts_*.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_ui_browser as ui
from helpers_ui import ChatServer
from playwright.sync_api import Page, expect
from test_ui_browser import ARTIFACTS, TIMEOUT, ask, editor_after_the_move

pytestmark = pytest.mark.browser
browser, page, phone = ui.browser, ui.page, ui.phone      # its fixtures, over this module's server

DRAFT_ASK = "Neues Projekt anlegen: Kräutergarten auf dem Balkon"
# what the user added in Obsidian to the saved note: a link and an edge line the draft does not have
IN_OBSIDIAN = "\nSiehe [[Zettelkasten]] für die Methode.\n> [!edge] related_to: [[qdrant]]\n"
BM25 = "concepts/bm25.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("ui_conflicts")).start()
    try:
        yield srv
    finally:
        srv.stop()


def shot(pg: Page, name: str) -> None:
    pg.screenshot(path=str(ARTIFACTS / f"ui_conflicts_{name}.png"))


def message(pg: Page, text: str):
    return pg.locator(".step").filter(has_text=text).last


def backup_in(text: str) -> str:
    found = re.search(r"\.mindnet/backups/\S+?\.bak", text)
    assert found, text
    return found.group(0)


# --------------------------------------------------------------------------- save conflicts


def conflict_with_a_changed_note(pg: Page, server: ChatServer) -> tuple[Path, str]:
    """The draft saved once, the note then edited in Obsidian, a second draft ("Salbei") saved: a conflict."""
    target = server.vault / "projects" / "Kräutergarten.md"
    target.unlink(missing_ok=True)
    ask(pg, DRAFT_ASK)
    editor_after_the_move(pg)                                # not the button of the editor being drawn anew
    pg.get_by_test_id("draft-save").last.click()
    expect(pg.get_by_text("Saved ", exact=False).last).to_be_visible(timeout=TIMEOUT)
    with target.open("a", encoding="utf-8") as fh:
        fh.write(IN_OBSIDIAN)
    before = target.read_text(encoding="utf-8")
    ask(pg, DRAFT_ASK)
    # the new draft's editor: the saved one above stays on the page, disabled (on a busy machine `.last` was
    # still that one when the test typed)
    editor = pg.locator("[data-testid='draft-text']:not([disabled])").last
    expect(editor).to_be_visible(timeout=TIMEOUT)
    editor.fill(editor.input_value().replace("Basilikum und Minze in Kästen.", "Salbei und Thymian in Töpfen."))
    pg.get_by_test_id("draft-save").last.click()
    expect(pg.get_by_test_id("conflict-diff").last).to_be_visible(timeout=TIMEOUT)
    return target, before


def test_conflict_shows_a_plain_text_diff_and_replace_keeps_a_backup(page: Page, server: ChatServer) -> None:
    target, before = conflict_with_a_changed_note(page, server)
    diff = page.get_by_test_id("conflict-diff").last
    removed = diff.locator("[data-op='-']")
    added = diff.locator("[data-op='+']")
    expect(removed.filter(has_text="- Siehe [[Zettelkasten]] für die Methode.")).to_have_count(1)
    expect(removed.filter(has_text="- > [!edge] related_to: [[qdrant]]")).to_have_count(1)
    expect(removed.filter(has_text="Basilikum und Minze in Kästen.")).to_have_count(1)
    expect(added.filter(has_text="+ Salbei und Thymian in Töpfen.")).to_have_count(1)
    assert diff.locator("a, blockquote, h1, strong").count() == 0          # note text as text, not Markdown
    choices = page.locator(".step").filter(has_text="Not saved").last
    for label in ("Replace (a backup is kept)", "Merge: append the new text", "Cancel / keep editing"):
        expect(page.get_by_role("button", name=label, exact=True).last).to_be_visible()
    words = choices.inner_text() + page.get_by_test_id("draft-status").last.inner_text()
    assert not re.search(r"overwrite=|replaces|fix:|version in this answer", words), words
    shot(page, "01_diff")
    page.get_by_role("button", name="Replace (a backup is kept)", exact=True).last.click()
    expect(page.get_by_test_id("draft-status").last).to_contain_text("saved to", timeout=TIMEOUT)
    kept = page.get_by_text("previous text is kept in", exact=False).last
    expect(kept).to_be_visible()
    assert (server.vault / backup_in(kept.inner_text())).read_text(encoding="utf-8") == before
    now = target.read_text(encoding="utf-8")
    assert "Salbei und Thymian in Töpfen." in now and "Zettelkasten" not in now
    shot(page, "02_replaced")


def test_merge_keeps_the_note_whole_and_appends_the_draft(phone: Page, server: ChatServer) -> None:
    target, before = conflict_with_a_changed_note(phone, server)
    diff = phone.get_by_test_id("conflict-diff").last
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width}px"
    assert diff.bounding_box()["width"] <= 390
    shot(phone, "03_diff_phone")
    phone.get_by_role("button", name="Merge: append the new text", exact=True).last.click()
    done = phone.get_by_text("Added your draft's text to the end of", exact=False).last
    expect(done).to_be_visible(timeout=TIMEOUT)
    now = target.read_text(encoding="utf-8")
    assert now.startswith(before.rstrip("\n") + "\n\n"), now             # the note as it was, whole
    added = now[len(before.rstrip("\n")):]
    assert "Salbei und Thymian in Töpfen." in added and "## Ziel" in added
    assert "---" not in added and "# Kräutergarten\n" not in added       # the body only: no second frontmatter
    assert (server.vault / backup_in(done.inner_text())).read_text(encoding="utf-8") == before
    shot(phone, "04_merged_phone")


def test_a_note_changed_since_the_conflict_is_refused_with_a_clear_message(page: Page, server: ChatServer) -> None:
    target, _ = conflict_with_a_changed_note(page, server)
    with target.open("a", encoding="utf-8") as fh:          # one more edit while the choice is on screen
        fh.write("Und der Rechen.\n")
    changed = target.read_text(encoding="utf-8")
    page.get_by_role("button", name="Merge: append the new text", exact=True).last.click()
    refused = page.locator(".step").filter(has_text="changed since it was shown").last
    expect(refused).to_contain_text("nothing was written", timeout=TIMEOUT)
    assert target.read_text(encoding="utf-8") == changed
    diff = page.get_by_test_id("conflict-diff").last                     # the diff against the text now
    expect(diff.locator("[data-op='-']").filter(has_text="Und der Rechen.")).to_have_count(1, timeout=TIMEOUT)
    shot(page, "05_changed_since")
    page.get_by_role("button", name="Cancel / keep editing", exact=True).last.click()
    expect(page.get_by_text("the draft is still open", exact=False).last).to_be_visible(timeout=TIMEOUT)
    assert target.read_text(encoding="utf-8") == changed


# --------------------------------------------------------------------------- /suggest


def type_command(pg: Page, text: str) -> None:
    """The whole command typed at once and sent with the send button (no pick from the command menu)."""
    composer = pg.locator("#chat-input")
    composer.click()
    composer.fill(text)
    pg.locator("#chat-submit").click()


def suggest(pg: Page, server: ChatServer, original: str) -> None:
    (server.vault / BM25).write_text(original, encoding="utf-8")
    answers = pg.get_by_role("button", name="Good answer").count()
    type_command(pg, f"/suggest {BM25}")
    expect(message(pg, "Suggestions for")).to_be_visible(timeout=TIMEOUT)
    assert pg.get_by_role("button", name="Good answer").count() == answers      # not answered as a question


@pytest.fixture
def original(server: ChatServer) -> Iterator[str]:
    path = server.vault / BM25
    text = path.read_text(encoding="utf-8")
    yield text
    path.write_text(text, encoding="utf-8")


def test_suggest_typed_in_one_go_lists_each_reason_once_with_apply_buttons(
        page: Page, server: ChatServer, original: str) -> None:
    suggest(page, server, original)
    listing = message(page, "Suggestions for")
    expect(listing).to_contain_text("(concepts/bm25.md)")
    text = listing.inner_text()
    assert text.count("default edge of type 'concept'") == 1, text       # said once, with the numbers it explains
    assert "mindnet suggest" not in text and "--apply" not in text
    items = listing.locator("li").all_inner_texts()
    assert len(items) == len(set(items)), items
    expect(page.get_by_role("button", name="Apply 1", exact=True).last).to_be_visible()
    expect(page.get_by_role("button", name="Apply all", exact=True).last).to_be_visible()
    shot(page, "06_suggest")
    type_command(page, "/suggest BM25")                                  # a note's title works too
    expect(page.locator(".step").filter(has_text="Suggestions for")).to_have_count(2, timeout=TIMEOUT)
    type_command(page, "/suggest Gibtsnicht Notiz")
    expect(message(page, "No note")).to_contain_text("Gibtsnicht Notiz", timeout=TIMEOUT)
    expect(message(page, "No note")).to_contain_text("a note's title")


def test_apply_previews_the_diff_then_writes_and_undo_restores(
        page: Page, server: ChatServer, original: str) -> None:
    suggest(page, server, original)
    path = server.vault / BM25
    page.get_by_role("button", name="Apply 1", exact=True).last.click()
    preview = message(page, "Preview:")
    expect(preview).to_contain_text("+> [!edge]", timeout=TIMEOUT)
    assert path.read_text(encoding="utf-8") == original                  # a preview writes nothing
    shot(page, "07_preview")
    page.get_by_role("button", name="Write to the note", exact=True).last.click()
    added = message(page, "Added 1 link to")
    expect(added).to_contain_text("Import finished", timeout=TIMEOUT)
    now = path.read_text(encoding="utf-8")
    assert now.startswith(original.rstrip("\n")) and re.search(r"\n> \[!edge\] \w+: \[\[[^\]]+\]\]\n$", now), now
    assert (server.vault / backup_in(added.inner_text())).read_text(encoding="utf-8") == original
    shot(page, "08_applied")
    page.get_by_role("button", name="Undo", exact=True).last.click()
    expect(message(page, "Undone:")).to_be_visible(timeout=TIMEOUT)
    assert path.read_text(encoding="utf-8") == original
    page.get_by_role("button", name="Apply all", exact=True).last.click()    # the list still fits the note again
    expect(message(page, "Preview:")).to_contain_text("links to add", timeout=TIMEOUT)
    shot(page, "09_undone")


def test_undo_refuses_when_the_note_changed_since(page: Page, server: ChatServer, original: str) -> None:
    suggest(page, server, original)
    path = server.vault / BM25
    page.get_by_role("button", name="Apply all", exact=True).last.click()
    page.get_by_role("button", name="Write to the note", exact=True).last.click()
    added = message(page, "links to")
    expect(added).to_contain_text("previous text is kept in", timeout=TIMEOUT)
    with path.open("a", encoding="utf-8") as fh:                         # edited in Obsidian after the apply
        fh.write("\nNoch ein Gedanke.\n")
    edited = path.read_text(encoding="utf-8")
    page.get_by_role("button", name="Undo", exact=True).last.click()
    refused = page.locator(".step").filter(has_text="Not undone").last
    expect(refused).to_contain_text("changed since the links were added", timeout=TIMEOUT)
    expect(refused).to_contain_text(".mindnet/backups/")
    assert path.read_text(encoding="utf-8") == edited
    shot(page, "10_undo_refused")


NO_SIDEWAYS = "() => document.scrollingElement.scrollWidth <= window.innerWidth"


def within_screen(pg: Page, locator) -> None:
    box = locator.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= ui.MOBILE["width"], box


def test_suggest_on_a_phone_lists_previews_applies_and_undoes_within_the_screen(
        phone: Page, server: ChatServer, original: str) -> None:
    suggest(phone, server, original)
    listing = message(phone, "Suggestions for")
    expect(listing).to_contain_text("(concepts/bm25.md)")
    assert listing.inner_text().count("default edge of type 'concept'") == 1
    within_screen(phone, listing)
    apply_one = phone.get_by_role("button", name="Apply 1", exact=True).last
    expect(apply_one).to_be_visible()
    within_screen(phone, apply_one)
    assert phone.evaluate(NO_SIDEWAYS)                                   # the page does not scroll sideways
    shot(phone, "11_suggest_phone")
    apply_one.click()
    preview = message(phone, "Preview:")
    expect(preview).to_contain_text("+> [!edge]", timeout=TIMEOUT)
    within_screen(phone, preview)
    assert phone.evaluate(NO_SIDEWAYS)
    assert (server.vault / BM25).read_text(encoding="utf-8") == original   # a preview writes nothing
    shot(phone, "12_preview_phone")
    write = phone.get_by_role("button", name="Write to the note", exact=True).last
    within_screen(phone, write)
    write.click()
    expect(message(phone, "Added 1 link to")).to_contain_text("Import finished", timeout=TIMEOUT)
    assert (server.vault / BM25).read_text(encoding="utf-8") != original
    phone.get_by_role("button", name="Undo", exact=True).last.click()
    expect(message(phone, "Undone:")).to_be_visible(timeout=TIMEOUT)
    assert (server.vault / BM25).read_text(encoding="utf-8") == original
    assert phone.evaluate(NO_SIDEWAYS)
    shot(phone, "13_undone_phone")
