"""Keeping Python's cyclic garbage collector off the index's big, long-lived heap.

Opening local Qdrant unpickles every point (10,000 notes: ~300k points, millions of Python objects), and the
mirrors a search uses hold hundreds of thousands more. Each automatic full collection walks all of them: while
they load (local Qdrant opened in 14.5 s with the collector, 9-10.7 s without) and afterwards, at random, in
a search (a 0.2-0.5 s stall in one of the first searches at 10,000 notes). None of it is cyclic garbage: it
lives as long as the index is open and is freed by reference counting when it is dropped.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: reading 500k points allocates millions of objects, and each automatic
    full collection walks every object local Qdrant holds (measured: 10k note payloads 1 s with, 20 ms without).
    Nothing read here forms cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def long_lived() -> Iterator[None]:
    """Load something that lives as long as the index: collect the garbage there is now (cheap: what was frozen
    before is not walked), load without the collector, then freeze everything alive (`gc.freeze`), so that no
    later collection walks it again. Only cyclic garbage made by the load itself could outlive its use, and
    loading makes none: a frozen object without cycles is still freed by reference counting."""
    gc.collect()
    try:
        with no_gc():
            yield
    finally:
        gc.freeze()
