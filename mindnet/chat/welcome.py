"""What a new chat offers: three lines on what mindnet does with the vault, and starter questions built from
the titles of the indexed notes (an empty index gets an "Import now" instead)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindnet.chat.import_notice import running, welcome_line

# one question per note type, in the order a first look at a vault is most telling
QUESTION_OF_TYPE: dict[str, str] = {
    "decision": "Warum {title}?",
    "concept": "Was ist {title}?",
    "project": "Wie steht es um {title}?",
    "value": "Was bedeutet mir {title}?",
    "experience": "Was habe ich bei {title} erlebt?",
    "source": "Was sagt {title}?",
    "person": "Wer ist {title}?",
    "task": "Was ist bei {title} zu tun?",
}
STARTERS = 4
_MAX_LABEL = 40


def starter_questions(notes: Sequence[Mapping[str, object]], limit: int = STARTERS) -> list[tuple[str, str]]:
    """(label, question) pairs for up to `limit` notes, one type after another in QUESTION_OF_TYPE's order
    (then any other type); within a type, the notes with the most links first, then by title."""
    by_type: dict[str, list[Mapping[str, object]]] = {}
    for n in notes:
        if str(n.get("title") or "").strip():
            by_type.setdefault(str(n.get("type") or ""), []).append(n)
    for group in by_type.values():
        group.sort(key=lambda n: (-int(n.get("links") or 0), str(n.get("title")).casefold()))
    order = [t for t in QUESTION_OF_TYPE if t in by_type] + sorted(t for t in by_type if t not in QUESTION_OF_TYPE)
    picked: list[Mapping[str, object]] = []
    while len(picked) < limit and any(by_type[t] for t in order):
        for t in order:
            if by_type[t] and len(picked) < limit:
                picked.append(by_type[t].pop(0))
    out = []
    for n in picked:
        # a question names the note in words: its frontmatter title or heading when it has one, else its file name
        written = [str(x) for x in n.get("names") or [] if str(x).strip()] if isinstance(n.get("names"), list) else []
        title = " ".join((written[0] if written else str(n["title"])).split())
        if n.get("type") == "decision":   # "Entscheidung: Qdrant statt Chroma" -> "Warum Qdrant statt Chroma?"
            title = title.split(": ", 1)[-1]
        question = QUESTION_OF_TYPE.get(str(n.get("type")), "Was steht in meinen Notizen zu {title}?")
        label = title if len(title) <= _MAX_LABEL else title[:_MAX_LABEL - 1] + "…"
        out.append((label, question.format(title=title)))
    return out


def welcome_text(*, vault: str, notes: int, progress: Mapping[str, Any] | None = None) -> str:
    """Three lines: what mindnet does with this vault, how to ask, what stays local. With the `progress` of a
    running import (`ImportProgress.as_dict()`), the first line says how far it is."""
    if progress is not None and running(progress):
        first = welcome_line(progress, vault)
    elif notes == 0:
        first = f"Your vault `{vault}` is not imported yet: **Import now** reads its notes into a local index."
    else:
        first = f"mindnet has read the {notes} notes of your vault `{vault}` into a local index of texts and links."
    return "\n".join([
        first,
        "Ask a question: the answer cites your notes as [1], [2], and each source shows why it was found.",
        "Say \"Neues Projekt: ...\" to draft a new note; nothing leaves this machine.",
    ])
