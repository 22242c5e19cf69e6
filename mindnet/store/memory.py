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


def settle() -> None:
    """Freeze everything alive now, so that later automatic collections do not walk it again. An import's phase 1
    calls it after its plan and after each written batch: it holds every note, chunk and edge it planned, and
    local Qdrant keeps every point it is given, so each full collection walked a heap growing with the vault
    (profiled with gc.callbacks, thread CPU: 3 s at 3,000 notes, 14 s at 10,000, 49 s at 30,000; with this 3.8 s
    at 10,000, peak RSS unchanged; pausing full passes for the whole phase instead kept 316 MB more). The
    import's data (notes, chunks, edges, Qdrant's payload dicts) holds no cycles."""
    gc.freeze()


@contextmanager
def long_lived() -> Iterator[None]:
    """Load something that lives as long as the index: collect the young garbage there is now, load without the
    collector, then freeze everything alive (`gc.freeze`), so that no later collection walks it again. A frozen
    object without cycles is still freed by reference counting when it is dropped, and loading makes no cycles.
    Not a full collection first: it walks every module's objects (~0.2 s, twice at a start from the start
    file); what old cyclic garbage it would have found is frozen too, a bounded amount once per open. (A test
    process opens hundreds of indexes: tests/conftest.py unfreezes after each test.)"""
    gc.collect(1)
    try:
        with no_gc():
            yield
    finally:
        gc.freeze()
