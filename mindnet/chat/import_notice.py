"""What a chat says while an import runs: how much of the vault it has read, and what a search covered.

An import has two phases (`mindnet.indexing.progress`): phase 1 writes the notes (found by keywords and links
from then on), phase 2 embeds their texts (found by meaning from then on). An answer given before both ended
says what it searched, and never claims that the notes hold nothing on a question while notes are unread.
All functions take `ImportProgress.as_dict()`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# the fact prompt's sentence for "not in the notes" (defaults/prompts/fact.md), and other ways of saying it
_NOTHING_CLAIM = re.compile(r"(Dazu steht nichts in deinen Notizen|In deinen Notizen steht (dazu )?nichts"
                            r"|Deine Notizen enthalten (dazu )?nichts)[^.!\n]*[.!]?", re.I)


def running(progress: Mapping[str, Any]) -> bool:
    return bool(progress.get("running"))


def notes_read(progress: Mapping[str, Any]) -> tuple[int, int]:
    """(notes in the index so far, notes in the vault) of a running import. The notes still to write are not
    searchable yet (on a first import, none is; on a re-import, only the new and changed ones are pending)."""
    total = int(progress.get("notes") or 0)
    pending = max(0, int(progress.get("notes_to_write") or 0) - int(progress.get("notes_written") or 0))
    if progress.get("phase") != "notes":
        pending = 0
    return max(0, total - pending), total


def welcome_line(progress: Mapping[str, Any], vault: str) -> str:
    """The welcome page's first line while an import runs."""
    read, total = notes_read(progress)
    if not total:
        return f"importing: mindnet is listing the notes of your vault `{vault}`; you can ask in a moment."
    if read < total:
        return (f"importing: {read} of {total} notes read from your vault `{vault}`; you can ask already, "
                f"answers search the notes read so far.")
    embedded, texts = int(progress.get("texts_embedded") or 0), int(progress.get("texts_total") or 0)
    return (f"importing: all {total} notes read from your vault `{vault}`, {embedded} of {texts} texts embedded "
            f"so far; until the rest are, answers find them by keywords and links.")


def searched_line(progress: Mapping[str, Any], *, unembedded: int) -> str | None:
    """What a search during an import covered ("searched 16 of 173 notes, by keywords only so far"); None when
    no import runs and every text has its vector."""
    if not running(progress) and not unembedded:
        return None
    read, total = notes_read(progress)
    texts = int(progress.get("texts_total") or 0)
    embedded = max(0, texts - unembedded) if texts else 0
    if not total:
        return "The import has just begun: no note was read yet, so this search found nothing to search."
    notes = f"all {total} notes" if read >= total else f"{read} of {total} notes"
    if unembedded and not embedded:
        how = "by keywords and links only so far (no text is embedded yet)"
    elif unembedded:
        how = f"by keywords and links, and by meaning in {embedded} of {texts} texts so far"
    else:
        how = "by keywords, links and meaning"
    rest = " The import is still reading your notes: ask again when it has finished for a complete answer." \
        if read < total or unembedded else ""
    return f"Searched {notes}, {how}.{rest}"


def still_reading_answer(progress: Mapping[str, Any]) -> str:
    """The answer when a search during an import found nothing: the notes are still being read."""
    read, total = notes_read(progress)
    so_far = f"{read} of {total} notes read so far" if total else "no note read yet"
    return (f"Your notes are still being imported ({so_far}), and none of those read so far matches this "
            f"question. Ask again when the import has finished; the strip at the top of the page shows how far "
            f"it is.")


def prompt_hint(progress: Mapping[str, Any]) -> str:
    """A line for the generation prompt: the notes given are not all notes yet."""
    read, total = notes_read(progress)
    so_far = f"bisher {read} von {total}" if read < total else "ihre Texte sind noch nicht alle eingebettet"
    return (f"(Hinweis: Der Import liest die Notizen noch, {so_far}. Steht die Antwort nicht "
            f"in den Notizen unten, sag: \"In den bisher gelesenen Notizen steht dazu nichts; der Import liest "
            f"noch.\" Sag nicht, dass in den Notizen nichts dazu steht.)")


def without_nothing_claim(answer: str, progress: Mapping[str, Any]) -> str:
    """`answer` with a claim that the notes hold nothing replaced by what is true during an import."""
    read, total = notes_read(progress)
    said = (f"In den bisher gelesenen Notizen ({read} von {total}) steht dazu nichts; der Import liest noch."
            if total else "Der Import hat noch keine Notiz gelesen.")
    return _NOTHING_CLAIM.sub(said, answer)
