"""Pure functions behind the agent tools (`mindnet.agents.tools`): passages, times, size and conflict
messages, the `since` of recent_changes, hops in a loaded link graph.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mindnet.agents.models import WriteNoteInput
from mindnet.errors import DraftConflictError, QueryError
from mindnet.retrieval.graph import note_of

PASSAGE_CHARS = 700


def passage(text: str) -> str:
    text = text.strip()
    return text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS].rsplit(" ", 1)[0] + " ..."


def iso_time(seconds: Any) -> str | None:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
        return None
    return datetime.fromtimestamp(float(seconds), UTC).isoformat(timespec="seconds")


def too_large(text: str, limit: int) -> str:
    return (f"the text is {len(text.encode('utf-8', 'surrogatepass'))} bytes, over the limit of {limit} bytes for "
            f"one call (MINDNET_MCP_MAX_WRITE_BYTES); split it into several notes or shorten it")


def frontmatter_type(markdown: str) -> str | None:
    m = re.match(r"\A\ufeff?---\r?\n(.*?)\r?\n---", markdown, re.S)
    if m:
        t = re.search(r"^type:\s*['\"]?([\w-]+)", m.group(1), re.M)
        if t:
            return t.group(1).lower()
    return None


def conflict_for_model(exc: DraftConflictError, a: WriteNoteInput) -> DraftConflictError:
    """The refusal with the one thing the model needs to go on: the version to pass as `replaces`."""
    conflict = exc.conflict or {}
    version = conflict.get("version")
    if version and not a.overwrite:
        hint = (f"read it with read_note and append_to_note, give the note another title, or replace it with "
                f"overwrite: true and replaces: '{version}'")
    elif version:
        hint = f"the note is now version '{version}': read it again, then pass that as replaces"
    else:
        hint = exc.hint or "give the note another title"
    return DraftConflictError(f"not written: {exc.message}", path=exc.path, hint=hint, conflict=conflict)


SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|min|h|d|w)\s*$", re.I)


def parse_since(value: str) -> datetime:
    """'24h', '90m', '7d', '2w' back from now, or an ISO date/time (UTC when it names no zone)."""
    span = SPAN.match(value)
    if span:
        amount, unit = float(span.group(1)), span.group(2).lower()
        minutes = {"m": 1, "min": 1, "h": 60, "d": 1440, "w": 10080}[unit]
        return datetime.now(UTC) - timedelta(minutes=amount * minutes)
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(f"{value!r} is neither a time nor a span; write e.g. '2026-11-30', "
                         f"'2026-11-30T08:00:00Z', '24h' or '7d'", field="since") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def distances(seeds: list[str], edges: list[dict]) -> dict[str, int]:
    """Hops from the nearest start note over the loaded links, either direction."""
    around: dict[str, set[str]] = {}
    for e in edges:
        a, b = e["note_id"], note_of(e["target_id"])
        around.setdefault(a, set()).add(b)
        around.setdefault(b, set()).add(a)
    distance = {s: 0 for s in seeds}
    frontier = list(seeds)
    while frontier:
        nxt = []
        for n in frontier:
            for other in around.get(n, ()):
                if other not in distance:
                    distance[other] = distance[n] + 1
                    nxt.append(other)
        frontier = nxt
    return distance
