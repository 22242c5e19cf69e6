"""Fitting a long chat message into a search: a search text may hold `MAX_TEXT_CHARS` characters, a chat
message many more (a pasted page). The search then uses the message's beginning and end - where the topic and
the question usually are - and the user is told so (`ChatResponse.input_notice`, the `input_notice` event)."""

from __future__ import annotations

from mindnet.retrieval.query import MAX_TEXT_CHARS

GAP = " … "


def fit_search_text(text: str, limit: int = MAX_TEXT_CHARS) -> tuple[str, str | None]:
    """(`text` or its beginning and end within `limit` characters, the notice for the user or None)."""
    text = text.strip()
    if len(text) <= limit:
        return text, None
    head = _cut_at_space(text[: (limit * 2) // 3], keep="start")
    tail = _cut_at_space(text[len(text) - (limit - len(head) - len(GAP)):], keep="end")
    fitted = f"{head}{GAP}{tail}"
    notice = (f"Your message has {len(text):,} characters, more than a search can take ({limit:,}): the notes "
              f"were searched with its beginning and its end ({len(fitted):,} characters). For a precise search, "
              "ask a shorter question.")
    return fitted, notice


def _cut_at_space(piece: str, *, keep: str) -> str:
    """`piece` without the word cut in half at its open end (unless it is one long word)."""
    if keep == "start":
        cut = piece.rfind(" ")
        return piece[:cut].rstrip() if cut > len(piece) // 2 else piece
    cut = piece.find(" ")
    return piece[cut + 1:].lstrip() if 0 <= cut < len(piece) // 2 else piece
