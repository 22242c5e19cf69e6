"""What the chat says while an import runs (mindnet.chat.import_notice): the welcome's first line, what a search
covered, and an answer that never claims the notes hold nothing while notes are unread."""

from __future__ import annotations

import pytest
from helpers_chat import chat_mindnet

from mindnet.chat import import_notice
from mindnet.chat.engine import ChatRequest
from mindnet.chat.welcome import welcome_text
from mindnet.errors import EmptyIndexError

PHASE1 = {"phase": "notes", "running": True, "notes": 173, "notes_written": 16, "notes_to_write": 173,
          "texts_total": 40, "texts_embedded": 0}
PHASE2 = {"phase": "embedding", "running": True, "notes": 173, "notes_written": 173, "notes_to_write": 173,
          "texts_total": 229, "texts_embedded": 120}
REIMPORT = {"phase": "notes", "running": True, "notes": 173, "notes_written": 0, "notes_to_write": 1,
            "texts_total": 229, "texts_embedded": 229}
DONE = {"phase": "done", "running": False, "notes": 173, "notes_written": 173, "notes_to_write": 173,
        "texts_total": 229, "texts_embedded": 229}


@pytest.mark.parametrize(("progress", "read"), [(PHASE1, (16, 173)), (PHASE2, (173, 173)), (REIMPORT, (172, 173)),
                                                (DONE, (173, 173))])
def test_notes_read_counts_the_notes_a_search_can_find(progress, read):
    assert import_notice.notes_read(progress) == read


@pytest.mark.parametrize(("progress", "unembedded", "line"), [
    (PHASE1, 40, "Searched 16 of 173 notes, by keywords and links only so far (no text is embedded yet). The "
                 "import is still reading your notes: ask again when it has finished for a complete answer."),
    (PHASE2, 109, "Searched all 173 notes, by keywords and links, and by meaning in 120 of 229 texts so far. The "
                  "import is still reading your notes: ask again when it has finished for a complete answer."),
    (DONE, 0, None),
])
def test_searched_line_says_what_the_search_covered(progress, unembedded, line):
    assert import_notice.searched_line(progress, unembedded=unembedded) == line


@pytest.mark.parametrize(("progress", "first"), [
    (PHASE1, "importing: 16 of 173 notes read from your vault `/v`; you can ask already, answers search the "
             "notes read so far."),
    (PHASE2, "importing: all 173 notes read from your vault `/v`, 120 of 229 texts embedded so far; until the "
             "rest are, answers find them by keywords and links."),
    ({**PHASE1, "notes": 0, "notes_to_write": 0, "notes_written": 0},
     "importing: mindnet is listing the notes of your vault `/v`; you can ask in a moment."),
])
def test_welcome_during_an_import_says_how_far_it_is(progress, first):
    assert welcome_text(vault="/v", notes=16, progress=progress).splitlines()[0] == first


def test_welcome_after_the_import_says_what_was_read():
    assert welcome_text(vault="/v", notes=173, progress=DONE).startswith("mindnet has read the 173 notes")


def test_nothing_claim_becomes_the_notes_read_so_far():
    answer = "Dazu steht nichts in deinen Notizen. Allgemein: Kompost braucht Zeit."
    assert import_notice.without_nothing_claim(answer, PHASE1) == (
        "In den bisher gelesenen Notizen (16 von 173) steht dazu nichts; der Import liest noch. "
        "Allgemein: Kompost braucht Zeit.")


@pytest.fixture
def mindnet(tmp_path, fake_ollama):
    m = chat_mindnet(tmp_path, fake_ollama.url)
    yield m
    m.close()


async def test_answer_during_an_import_says_what_it_searched_and_not_nothing_in_your_notes(mindnet, fake_ollama):
    mindnet.progress.update(writing=True, ran=True, notes_total=173, notes_to_write=173, notes_written=16)
    fake_ollama.script(["Dazu steht nichts in deinen Notizen."])
    response = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert response.sources
    assert response.import_notice and response.import_notice.startswith("Searched 16 of 173 notes")
    assert response.answer == ("In den bisher gelesenen Notizen (16 von 173) steht dazu nichts; der Import "
                               "liest noch.")
    prompt = fake_ollama.bodies("/api/chat")[-1]["messages"][-1]["content"]
    assert "Der Import liest die Notizen noch, bisher 16 von 173" in prompt
    mindnet.progress.update(writing=False)
    fake_ollama.script(["Dazu steht nichts in deinen Notizen."])
    after = await mindnet.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    assert (after.import_notice, after.answer) == (None, "Dazu steht nichts in deinen Notizen.")


async def test_answer_before_the_first_import_wrote_a_note_says_the_notes_are_being_read(tmp_path, fake_ollama):
    from mindnet.service import Mindnet
    from mindnet.settings import Settings
    m = Mindnet(Settings(embedding="ollama", ollama_url=fake_ollama.url, llm_model="phi3:mini",
                         qdrant_path=tmp_path / "q", cache_dir=tmp_path / "c", log_dir=tmp_path / "logs",
                         vault_root=tmp_path, llm_timeout=5))
    try:
        m.progress.update(writing=True, ran=True, notes_total=173, notes_to_write=173, notes_written=0)
        response = await m.chat.achat(ChatRequest(message="Was ist Qdrant?"))
        assert response.answer.startswith("Your notes are still being imported (0 of 173 notes read so far)")
        assert response.import_notice.startswith("Searched 0 of 173 notes")
        assert fake_ollama.count("/api/chat") == 0           # no model asked: nothing to answer from
        m.progress.update(writing=False)
        with pytest.raises(EmptyIndexError):
            await m.chat.achat(ChatRequest(message="Was ist Qdrant?"))
    finally:
        m.close()
