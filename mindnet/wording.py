"""Small helpers for the words mindnet prints, shared by the CLI and the chat UI."""

from __future__ import annotations


def plural(n: int, word: str, plural_form: str | None = None) -> str:
    """`plural(1, "passage")` -> "1 passage", `plural(2, "passage")` -> "2 passages"; irregular forms explicitly:
    `plural(2, "query", "queries")`."""
    return f"{n} {word if n == 1 else plural_form or word + 's'}"
