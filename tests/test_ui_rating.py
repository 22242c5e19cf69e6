"""The answer's rating without a browser: what its element shows, the query_id a stored answer keeps, and the
thread store keeping no ratings of Chainlit's own (mindnet's are in feedback.jsonl)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from chainlit.types import Feedback
from chainlit.user import User

from mindnet.ui.rating import rating_elements, rating_props, step_query_id
from mindnet.ui.threads import SQLiteDataLayer, create_schema

QID = "0b6c3f0e-7d8a-4a55-9f6e-1c2d3e4f5a6b"


def test_rating_props_show_the_last_rating_and_the_reasons_offered() -> None:
    props = rating_props(QID, {"score": 1, "reasons": ["missing_note", "gone"], "comment": "fehlt"})
    assert (props["query_id"], props["score"], props["reasons"], props["comment"]) == \
        (QID, 1, ["missing_note"], "fehlt")
    assert props["offered"] == [{"id": "wrong_source", "label": "wrong source"},
                                {"id": "missing_note", "label": "missing note"},
                                {"id": "wrong_answer", "label": "wrong answer"}]
    assert rating_props(QID)["score"] == 0          # not rated yet


@pytest.mark.parametrize(("step", "expected"), [
    ({"type": "assistant_message", "metadata": json.dumps({"query_id": QID})}, QID),   # as SQLite gives it back
    ({"type": "assistant_message", "metadata": {"query_id": QID}}, QID),
    ({"type": "assistant_message", "metadata": "{}"}, ""),
    ({"type": "assistant_message", "metadata": "not json"}, ""),
    ({"type": "user_message", "metadata": {"query_id": QID}}, ""),
])
def test_step_query_id(step: dict, expected: str) -> None:
    assert step_query_id(step) == expected


@pytest.mark.asyncio
async def test_thread_store_refuses_chainlit_ratings_and_gives_none_back(tmp_path: Path) -> None:
    from chainlit.context import init_http_context
    init_http_context()
    db = create_schema(tmp_path / "threads.sqlite")
    layer = SQLiteDataLayer(db)
    user = await layer.create_user(User(identifier="local"))
    await layer.update_thread("t1", name="q", user_id=user.id)
    await layer.create_step({"id": "s1", "threadId": "t1", "name": "on_message", "type": "run", "output": "",
                             "createdAt": "2026-01-01T10:00:00Z", "streaming": False, "metadata": {}})
    with pytest.raises(ValueError, match="rate the answer with its Good answer or Bad answer button"):
        await layer.upsert_feedback(Feedback(forId="s1", value=0, comment="schlecht", threadId="t1"))
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM feedbacks").fetchone() == (0,)
        # one given with Chainlit's thumbs by an earlier version
        con.execute("""INSERT INTO feedbacks ("id", "forId", "threadId", "value", "comment")
                       VALUES ('f1', 's1', 't1', 0, 'alt')""")
    thread = await layer.get_thread("t1")
    assert thread is not None and [s.get("feedback") for s in thread["steps"]] == [None]
    await layer.close()


@pytest.mark.asyncio
async def test_a_resumed_thread_brings_each_answer_its_rating_element(tmp_path: Path) -> None:
    from chainlit.context import init_http_context
    init_http_context()
    latest = {(QID, "generated_answer"): {"score": 5, "reasons": [], "comment": None}}

    async def ratings(thread: dict) -> list[dict]:
        return rating_elements(thread, latest)
    layer = SQLiteDataLayer(create_schema(tmp_path / "threads.sqlite"), extra_elements=ratings)
    user = await layer.create_user(User(identifier="local"))
    await layer.update_thread("t1", name="q", user_id=user.id)
    for sid, kind, metadata in [("s1", "user_message", {}), ("s2", "assistant_message", {"query_id": QID}),
                                ("s3", "assistant_message", {})]:      # s3: an answer that could not be rated
        await layer.create_step({"id": sid, "threadId": "t1", "name": kind, "type": kind, "output": "x",
                                 "createdAt": f"2026-01-01T10:00:0{sid[1]}Z", "streaming": False,
                                 "metadata": metadata})
    thread = await layer.get_thread("t1")
    assert thread is not None
    (element,) = thread["elements"]
    assert (element["name"], element["display"], element["forId"], element["threadId"]) == \
        ("AnswerRating", "inline", "s2", "t1")
    assert (element["props"]["query_id"], element["props"]["score"]) == (QID, 5)
    await layer.close()
