"""Errors at the edge of the chat: a failing Chainlit callback becomes a chat message, never a traceback."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import chainlit as cl
from pydantic import ValidationError

from mindnet.errors import MindnetError
from mindnet.ui.escaping import escape

log = logging.getLogger(__name__)


def readable(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Turn any failure of a callback into a chat message instead of a traceback."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ValidationError as exc:   # a request the core refused: its first problem, in one sentence
            problem = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = ".".join(str(p) for p in problem.get("loc", ()))
            await say_error("Invalid request", f"{where}: {problem['msg']}" if where else str(problem["msg"]))
        except MindnetError as exc:
            await say_error(type(exc).__name__, str(exc))
        except Exception as exc:  # noqa: BLE001 - the edge: show it, log the traceback
            log.exception("chat callback %s failed", fn.__name__)
            await say_error("Unexpected error", f"{type(exc).__name__}: {exc}")
        return None

    return wrapper


async def say_error(title: str, detail: str, actions: list[cl.Action] | None = None) -> None:
    message = cl.ErrorMessage(content=f"**{escape(title)}:** {escape(detail)}")
    await message.send()
    for action in actions or []:      # an error message takes no actions of its own: attached to it
        await action.send(for_id=message.id)
