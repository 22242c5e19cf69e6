"""A generous wall-clock guard for tests of pathological inputs: a super-linear regex takes minutes on them, a
linear one milliseconds, so the guard only turns a hang into a failure (it is not a speed assertion)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fails_after(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in the main thread after `seconds` (the re module checks for signals while it
    backtracks, so a runaway match is interrupted)."""
    def expire(signum, frame):  # type: ignore[no-untyped-def]
        raise TimeoutError(f"still running after {seconds} s: super-linear on this input")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
