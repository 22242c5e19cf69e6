"""Chat threads that survive a reload: Chainlit's SQLAlchemy data layer on a local SQLite file.

Chainlit stores users, threads, steps (messages) and feedback through its data layer and lists a user's threads
in the sidebar, so they can be resumed. It ships no schema for SQLite: `create_schema` creates the tables it
writes to, idempotently, at start-up. Chainlit lists threads only for a logged-in user: without
MINDNET_API_TOKEN (the token login), the one local user is logged in automatically through header auth.
Source panels and other elements are not stored (that needs a blob store); the messages and steps are, with
what `resume` needs to rebuild a turn in their metadata.
Ratings are not kept here: mindnet's rating (`rating.py`) writes feedback.jsonl, so this data layer stores no
Chainlit feedback and gives none back (old rows in `feedbacks` stay unused); a thread comes back with each
answer's rating element instead, built from feedback.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

from mindnet.data_folder import move_aside, private_file, report_damage

log = logging.getLogger(__name__)
ExtraElements = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]
LOCAL_USER = "local"
THREADS_FILE = "threads.sqlite"

# the columns Chainlit 2.x's SQLAlchemyDataLayer reads and writes; JSON values are stored as TEXT
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS users (
        "id" TEXT PRIMARY KEY, "identifier" TEXT NOT NULL UNIQUE, "metadata" TEXT NOT NULL DEFAULT '{}',
        "createdAt" TEXT)""",
    """CREATE TABLE IF NOT EXISTS threads (
        "id" TEXT PRIMARY KEY, "createdAt" TEXT, "name" TEXT,
        "userId" TEXT REFERENCES users("id") ON DELETE CASCADE, "userIdentifier" TEXT,
        "tags" TEXT, "metadata" TEXT)""",
    """CREATE TABLE IF NOT EXISTS steps (
        "id" TEXT PRIMARY KEY, "name" TEXT NOT NULL, "type" TEXT NOT NULL,
        "threadId" TEXT NOT NULL REFERENCES threads("id") ON DELETE CASCADE, "parentId" TEXT,
        "command" TEXT, "modes" TEXT, "streaming" BOOLEAN NOT NULL DEFAULT 0, "waitForAnswer" BOOLEAN,
        "isError" BOOLEAN, "metadata" TEXT, "tags" TEXT, "input" TEXT, "output" TEXT, "createdAt" TEXT,
        "start" TEXT, "end" TEXT, "generation" TEXT, "showInput" TEXT, "language" TEXT, "indent" INTEGER,
        "defaultOpen" BOOLEAN, "autoCollapse" BOOLEAN, "icon" TEXT)""",
    """CREATE TABLE IF NOT EXISTS elements (
        "id" TEXT PRIMARY KEY, "threadId" TEXT REFERENCES threads("id") ON DELETE CASCADE, "type" TEXT,
        "url" TEXT, "chainlitKey" TEXT, "name" TEXT NOT NULL, "display" TEXT, "objectKey" TEXT,
        "size" TEXT, "page" INTEGER, "language" TEXT, "forId" TEXT, "mime" TEXT, "props" TEXT,
        "autoPlay" BOOLEAN, "playerConfig" TEXT)""",
    """CREATE TABLE IF NOT EXISTS feedbacks (
        "id" TEXT PRIMARY KEY, "forId" TEXT NOT NULL, "threadId" TEXT NOT NULL, "value" INTEGER NOT NULL,
        "comment" TEXT)""",
)


def threads_path(cache_dir: Path) -> Path:
    """The SQLite file beside the cache in the data folder (./data/threads.sqlite by default): not a cache,
    so clearing the cache keeps the conversations."""
    return Path(cache_dir).resolve().parent / THREADS_FILE


def create_schema(path: Path) -> Path:
    """Create the data layer's tables in `path` if missing; safe to call on every start. A damaged file is moved
    aside (`threads.sqlite.damaged-<time>`, kept) and a new one started: the server starts, /health says
    where the old conversations are."""
    try:
        _create(path)
    except sqlite3.DatabaseError as exc:
        aside = move_aside(path)
        message = (f"{path} was damaged ({exc}): moved aside to {aside.name}; the earlier conversations are kept "
                   f"there, new ones start in a fresh file")
        report_damage(path, message)
        log.warning("%s", message)
        _create(path)
    return path


def _create(path: Path) -> None:
    private_file(path)
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement)
        db.execute("SELECT count(*) FROM threads").fetchone()     # a garbled file fails here



class SQLiteDataLayer(SQLAlchemyDataLayer):
    """Chainlit's SQLAlchemy data layer, with list parameters (tags) stored as JSON text: SQLite has no arrays."""

    def __init__(self, path: Path, *, extra_elements: ExtraElements | None = None) -> None:
        super().__init__(conninfo=f"sqlite+aiosqlite:///{path}")
        # (an asyncio.Lock binds to the running loop on first use, since Python 3.10: made here is fine)
        self._step_writes = asyncio.Lock()
        self._extra_elements = extra_elements    # elements a thread gets back that are not stored here
        # threads named so far in this process: automatically (Chainlit's first-interaction name), and by topic
        self._auto_named: set[str] = set()
        self._topic_named: set[str] = set()
        self._name_writes = asyncio.Lock()

    async def create_step(self, step_dict: Any) -> None:
        # Chainlit writes each update of a streamed message in its own task, and a step write is several
        # statements: one at a time, in order (asyncio.Lock is FIFO), so the final text is the one stored
        async with self._step_writes:
            await super().create_step(step_dict)

    async def upsert_feedback(self, feedback: Any) -> str:
        raise ValueError("ratings are kept in mindnet's feedback.jsonl: rate the answer with its Good answer or "
                         "Bad answer button")

    async def delete_feedback(self, feedback_id: str) -> bool:
        return True

    async def get_thread(self, thread_id: str) -> Any:
        thread = await super().get_thread(thread_id)
        if thread is None:
            return None
        for step in thread.get("steps") or []:
            step["feedback"] = None    # a rating given with Chainlit's thumbs before: it must not show beside mindnet's
        if self._extra_elements is not None:
            thread["elements"] = [*(thread.get("elements") or []), *await self._extra_elements(dict(thread))]
        return thread

    async def update_thread(self, thread_id: str, name: str | None = None, user_id: str | None = None,
                            metadata: dict | None = None, tags: list[str] | None = None) -> None:
        # Chainlit names a thread after its first interaction; when that is a button, the name is the action's
        # ("draft_analyze" after a restored draft): not a name for a conversation. mindnet names it by its topic.
        from chainlit.config import config
        if name is not None and name in config.code.action_callbacks:
            name = None
        # a thread write is a read and an upsert, several awaits apart: one at a time, in order (FIFO), so a
        # name decided first is also written first and the topic name, decided after, is written after it
        async with self._name_writes:
            if name is not None and thread_id not in self._auto_named:
                # a thread's first name is Chainlit's automatic one (the first message), written by a task of its
                # own that can land after the answer, when mindnet has named the thread by topic: the topic wins.
                # Later names (the user's rename in the sidebar) always apply.
                self._auto_named.add(thread_id)
                if thread_id in self._topic_named:
                    name = None
            await super().update_thread(thread_id, name=name, user_id=user_id, metadata=metadata, tags=tags)

    async def name_by_topic(self, thread_id: str, name: str) -> None:
        """Name a thread by its topic (`resume.thread_title`), whether or not Chainlit's automatic name has
        been written yet."""
        self._topic_named.add(thread_id)
        async with self._name_writes:
            await super().update_thread(thread_id, name=name)

    async def execute_sql(self, query: str, parameters: dict) -> Any:
        params = {k: json.dumps(v) if isinstance(v, list) else v for k, v in parameters.items()}
        return await super().execute_sql(query, params)


# the data layers Chainlit opened: a mounted Chainlit app gets no shutdown of its own, so the server closes them
_open_layers: list[SQLiteDataLayer] = []


async def close_data_layers() -> None:
    """Close the SQLite connections at server stop: left open, their worker thread fails on the closed loop
    and prints a traceback into the user's terminal."""
    while _open_layers:
        await _open_layers.pop().close()


def enable_threads(cache_dir: Path, *, token_login: bool) -> Path:
    """Persist chats in the data folder and, without a token login, log the local user in by itself."""
    import chainlit as cl
    from chainlit.config import config
    from chainlit.utils import wrap_user_function

    from mindnet.ui.rating import thread_ratings

    path = create_schema(threads_path(cache_dir))

    def open_layer() -> SQLiteDataLayer:
        _open_layers.append(SQLiteDataLayer(path, extra_elements=thread_ratings))
        return _open_layers[-1]
    config.code.data_layer = open_layer
    if not token_login:
        async def local_user(headers: Any) -> cl.User:
            return cl.User(identifier=LOCAL_USER, metadata={"provider": "local"})
        config.code.header_auth_callback = wrap_user_function(local_user)
    # Chainlit signs its login cookie with this secret; a fresh one per server start unless the user set one
    os.environ.setdefault("CHAINLIT_AUTH_SECRET", secrets.token_urlsafe(32))
    return path


def resumed_history(steps: list[dict[str, Any]], turns: int) -> list[dict[str, str]]:
    """The last `turns` questions and answers of a stored thread, oldest first, as the chat's history."""
    roles = {"user_message": "user", "assistant_message": "assistant"}
    history = [{"role": roles[s["type"]], "content": s.get("output") or ""}
               for s in sorted(steps, key=lambda s: s.get("createdAt") or "") if s.get("type") in roles]
    return [h for h in history if h["content"]][-2 * turns:]
