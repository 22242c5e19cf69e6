"""Full passes of Python's cyclic garbage collector, paused while an import builds and writes a vault.

Phase 1 of an import holds every note, chunk and edge it planned, and local Qdrant keeps every point it is
given: the heap grows with the vault. Each automatic full collection walks all of it, and they come at every
25% of growth, so at 30,000 notes they cost ~50 s of the import (profiled; 14 s at 10,000 notes, 3 s at 3,000:
faster than the vault grows). `full_passes_paused` keeps the young collections (objects just made; cycles that
die young are still freed) and postpones the full ones until the import ends; the next full pass after it finds
any cycles that were left. Nested and concurrent uses share one pause.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None
PAUSED_THRESHOLD = 1_000_000     # young-generation collections before a full one is even considered


@contextmanager
def full_passes_paused() -> Iterator[None]:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], max(_saved[2], PAUSED_THRESHOLD))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
