"""The rating of an answer: one `AnswerRating` element under it ("Good answer" / "Bad answer", and for a bad
answer optional reasons and a comment), saved through the `rate` action into feedback.jsonl with the answer's
query_id. It is the chat's only rating: Chainlit's own thumbs are hidden (mindnet.css) and its data layer keeps
no ratings of its own (`threads.SQLiteDataLayer`).

A resumed thread gets the elements back (Chainlit stores no elements without a blob store): each stored answer
keeps its query_id in its metadata, and the thread store hands Chainlit the answer's element with the thread
(`thread_ratings`), showing the rating that counts, the last one given.
"""

from __future__ import annotations

import asyncio
from typing import Any

import chainlit as cl

from mindnet.logs import FEEDBACK_REASONS, GENERATED_ANSWER
from mindnet.ui.registry import get_mindnet
from mindnet.ui.resume import stored_metadata

ELEMENT = "AnswerRating"


def rating_props(query_id: str, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the element shows: the rating that counts (score 0 when none) and the reasons it may offer."""
    record = record or {}
    return {"query_id": query_id, "score": int(record.get("score") or 0),
            "reasons": [r for r in record.get("reasons") or [] if r in FEEDBACK_REASONS],
            "comment": str(record.get("comment") or ""),
            "offered": [{"id": k, "label": v} for k, v in FEEDBACK_REASONS.items()]}


def rating_element(query_id: str, record: dict[str, Any] | None = None) -> cl.CustomElement:
    return cl.CustomElement(name=ELEMENT, display="inline", props=rating_props(query_id, record))


async def send_rating(message_id: str, query_id: str) -> None:
    """The rating controls under a new answer."""
    await rating_element(query_id).send(for_id=message_id)


def step_query_id(step: dict[str, Any]) -> str:
    """The query_id a stored answer was shown with ("" for other steps)."""
    if step.get("type") != "assistant_message":
        return ""
    return str(stored_metadata(step).get("query_id") or "")


def rating_elements(thread: dict[str, Any], latest: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The rating element of every stored answer of `thread`, showing its rating in `latest`, as Chainlit's
    element dicts (what a data layer gives back with a thread)."""
    out = []
    for step in thread.get("steps") or []:
        if query_id := step_query_id(step):
            element = cl.CustomElement(name=ELEMENT, display="inline", for_id=step["id"], thread_id=thread["id"],
                                       props=rating_props(query_id, latest.get((query_id, GENERATED_ANSWER))))
            out.append(dict(element.to_dict()))
    return out


async def thread_ratings(thread: dict[str, Any]) -> list[dict[str, Any]]:
    """`rating_elements` with the ratings of feedback.jsonl (read only for a thread that has rated answers)."""
    if not any(step_query_id(s) for s in thread.get("steps") or []):
        return []
    latest = await asyncio.to_thread(get_mindnet().logs.latest_feedback)
    return rating_elements(thread, latest)
