"""The chat's thread store: the SQLite schema for Chainlit's SQLAlchemy data layer, on a temp file."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from chainlit.user import User

from mindnet.ui.threads import SQLiteDataLayer, create_schema, resumed_history, threads_path


def test_schema_is_created_once_and_again_without_loss(tmp_path: Path) -> None:
    db = create_schema(tmp_path / "data" / "threads.sqlite")
    with sqlite3.connect(db) as con:
        con.execute("""INSERT INTO users ("id", "identifier") VALUES ('u1', 'local')""")
    create_schema(db)   # every start: idempotent, keeps what is there
    with sqlite3.connect(db) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert con.execute("SELECT identifier FROM users").fetchall() == [("local",)]
    assert {"users", "threads", "steps", "elements", "feedbacks"} <= tables


def test_threads_file_sits_in_the_data_folder_beside_the_cache(tmp_path: Path) -> None:
    assert threads_path(tmp_path / "data" / "cache") == (tmp_path / "data" / "threads.sqlite").resolve()


@pytest.mark.asyncio
async def test_data_layer_stores_a_thread_lists_it_and_gives_it_back(tmp_path: Path) -> None:
    from chainlit.context import init_http_context
    init_http_context()   # step writes look up Chainlit's context, as they do inside a chat
    layer = SQLiteDataLayer(create_schema(tmp_path / "threads.sqlite"))
    user = await layer.create_user(User(identifier="local"))
    assert user is not None and (await layer.get_user("local")).id == user.id
    await layer.update_thread("t1", name="What is PageRank?", user_id=user.id, tags=["mindnet"])
    steps = [("s1", "user_message", "What is PageRank?", "2026-01-01T10:00:00Z"),
             ("s2", "assistant_message", "PageRank ranks notes [1].", "2026-01-01T10:00:01Z")]
    for sid, kind, text, at in steps:
        await layer.create_step({"id": sid, "threadId": "t1", "name": kind, "type": kind, "output": text,
                                 "createdAt": at, "streaming": False, "metadata": {}})

    from chainlit.types import Pagination, ThreadFilter
    listed = await layer.list_threads(Pagination(first=10), ThreadFilter(userId=user.id))
    assert [t["id"] for t in listed.data] == ["t1"] and listed.data[0]["name"] == "What is PageRank?"
    thread = await layer.get_thread("t1")
    assert thread is not None and thread["userIdentifier"] == "local"
    assert resumed_history(thread["steps"], turns=10) == [
        {"role": "user", "content": "What is PageRank?"},
        {"role": "assistant", "content": "PageRank ranks notes [1]."}]
    await layer.delete_thread("t1")
    assert await layer.get_thread("t1") is None


@pytest.mark.asyncio
async def test_a_topic_name_outlasts_the_automatic_name_that_lands_after_it_but_not_a_rename(tmp_path: Path) -> None:
    # Chainlit writes a thread's automatic name (its first message) from a task of its own; on a busy machine
    # it landed after mindnet's topic name and replaced it (CI of stop 37)
    from chainlit.context import init_http_context
    init_http_context()
    layer = SQLiteDataLayer(create_schema(tmp_path / "threads.sqlite"))
    user = await layer.create_user(User(identifier="local"))
    assert user is not None

    async def name(thread_id: str) -> str:
        from chainlit.types import Pagination, ThreadFilter
        listed = await layer.list_threads(Pagination(first=10), ThreadFilter(userId=user.id))
        return next(t["name"] for t in listed.data if t["id"] == thread_id)

    await layer.name_by_topic("late", "New note: Kräutergarten")          # the topic first ...
    await layer.update_thread("late", name="Neues Projekt anlegen", user_id=user.id)   # ... the automatic name after
    assert await name("late") == "New note: Kräutergarten"
    await layer.update_thread("late", name="Balkon")                       # the user's rename in the sidebar
    assert await name("late") == "Balkon"

    await layer.update_thread("early", name="Neues Projekt anlegen", user_id=user.id)  # the usual order
    await layer.name_by_topic("early", "New note: Kräutergarten")
    assert await name("early") == "New note: Kräutergarten"
    await layer.update_thread("early", name="Balkon")
    assert await name("early") == "Balkon"


@pytest.mark.asyncio
async def test_an_automatic_name_decided_first_but_written_late_does_not_replace_the_topic(tmp_path: Path) -> None:
    # a thread write is a read then an upsert: the automatic name's upsert, held up between the two on a busy
    # machine, landed after the topic name's (loaded CI of stop 38) unless the writes go one at a time
    from chainlit.context import init_http_context
    init_http_context()
    held = asyncio.Event()
    released = asyncio.Event()

    class SlowUpsert(SQLiteDataLayer):
        async def execute_sql(self, query: str, parameters: dict):
            if "INSERT INTO threads" in query and parameters.get("name") == "Neues Projekt anlegen":
                held.set()
                await released.wait()
            return await super().execute_sql(query, parameters)

    layer = SlowUpsert(create_schema(tmp_path / "threads.sqlite"))
    user = await layer.create_user(User(identifier="local"))
    assert user is not None
    automatic = asyncio.create_task(layer.update_thread("t", name="Neues Projekt anlegen", user_id=user.id))
    await asyncio.wait_for(held.wait(), 10)                     # decided and read: its upsert is held up
    topic = asyncio.create_task(layer.name_by_topic("t", "New note: Kräutergarten"))
    for _ in range(20):                                         # let the topic name go as far as it can
        await asyncio.sleep(0)
    released.set()
    await asyncio.wait_for(asyncio.gather(automatic, topic), 10)

    from chainlit.types import Pagination, ThreadFilter
    listed = await layer.list_threads(Pagination(first=10), ThreadFilter(userId=user.id))
    assert [t["name"] for t in listed.data] == ["New note: Kräutergarten"]


def test_resumed_history_keeps_the_last_turns_in_order() -> None:
    def at(i: int, n: int) -> str:
        return f"2026-01-01T10:00:{i:02d}{n}"
    steps = [{"type": "assistant_message", "output": f"a{i}", "createdAt": at(i, 1)} for i in range(5)]
    steps += [{"type": "user_message", "output": f"q{i}", "createdAt": at(i, 0)} for i in range(5)]
    steps += [{"type": "run", "output": "step", "createdAt": "x"}]
    assert [h["content"] for h in resumed_history(steps, turns=2)] == ["q3", "a3", "q4", "a4"]
