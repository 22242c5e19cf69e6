"""A per-note time budget for the import's CPU work on one note.

Every stage of reading a note is linear in its size (tests double hostile inputs and bound the ratio), but a
2 MB note of nothing but links or headings still costs seconds of Python, during which the rest of the import
waits. The import runs each note's reading and linking inside `note_budget(seconds)`; the stages that walk the
body line by line call `checkpoint(line)`. Past the budget, `checkpoint` raises `NoteBudgetExceeded` with the
body line it had reached, and the import reads the note again cut at that line ("imported as far as it was
read"), with a report line naming the note, the budget and the line.

Outside a budget (a draft, the analyzer, the library) `checkpoint` costs one context-variable read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from mindnet.errors import NoteBudgetExceeded

__all__ = ["NoteBudgetExceeded", "checkpoint", "note_budget", "within_budget"]

CHECK_EVERY = 256           # lines between two clock reads
T = TypeVar("T")


class _Budget:
    __slots__ = ("deadline", "reached", "seconds", "ticks")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.ticks = 0
        self.reached = 0        # the furthest body line any stage got to


_current: ContextVar[_Budget | None] = ContextVar("mindnet_note_budget", default=None)


@contextmanager
def note_budget(seconds: float | None) -> Iterator[None]:
    """Run the block under a budget of `seconds` (None: no budget)."""
    token = _current.set(_Budget(seconds) if seconds else None)
    try:
        yield
    finally:
        _current.reset(token)


def checkpoint(line: int, cost: int = 1) -> None:
    """Called by a stage at body line `line` (0-based) after work worth `cost` lines (a whole chunk: pass
    CHECK_EVERY); raises `NoteBudgetExceeded` past the budget."""
    budget = _current.get()
    if budget is None:
        return
    budget.ticks += cost
    if line > budget.reached:
        budget.reached = line
    if budget.ticks >= CHECK_EVERY:
        budget.ticks = 0
        if time.monotonic() > budget.deadline:
            # the stage that ran out got to `line`; one that ran out at its start (the time went to the passes
            # before it, which walked further) keeps half of what they walked
            raise NoteBudgetExceeded(line if line > 0 else budget.reached // 2, budget.seconds)


def within_budget(seconds: float | None, attempt: Callable[[int | None], T]) -> tuple[T, int | None]:
    """`attempt(None)` (the whole body) within the budget; past it, `attempt(lines)` with the body cut at the
    line reached. The second attempt runs without a budget: every stage of it walks at most the lines the stage
    that ran out walked, so it costs about the budget again. Returns the result and the number of body lines
    kept (None: all)."""
    try:
        with note_budget(seconds):
            return attempt(None), None
    except NoteBudgetExceeded as exc:
        return attempt(exc.line), exc.line
