"""A shim for qdrant-client's local mode: amortised O(1) growth of its per-point deletion flags.

`LocalCollection._add_point` (qdrant-client 1.20.0) grows `self.deleted` and each `self.deleted_per_vector[name]`
by one element per new point with `np.append`, which copies the whole array: O(n) per point, O(n^2) per
collection. At 30,000 notes the edges collection takes 664,000 points in one import; appending to a 300,000-long
array 300,000 times costs minutes on its own (`python -m mindnet.evaluation.bench_scale` shows the import growing
faster than the vault).

The shim runs the library's own `_add_point` unchanged, with those flag arrays swapped for empty ones of the same
dtype for the call: its `np.append` then copies nothing, and the one flag it appended (value and dtype exactly as
`np.append` made them) is written into a backing buffer that grows geometrically. `self.deleted` and
`self.deleted_per_vector[name]` stay arrays of exactly the collection's length (views of that buffer), so every
other method of the library sees what it expects; an array the library replaces itself (loading a collection,
deleting a vector name) is taken over as it is on the next append.

Applied only to the qdrant-client versions it was checked against (`VERIFIED`): another version is left alone,
with a log line. `tests/test_local_growth.py` compares a patched collection with an unpatched one operation by
operation.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

import numpy as np

log = logging.getLogger(__name__)

VERIFIED = frozenset({"1.20.0"})     # qdrant-client versions whose `_add_point` this shim was checked against
_STATE = "_mindnet_flag_buffers"    # per collection: key -> (backing buffer, the view handed out)
_MIN_CAPACITY = 64

_installed: dict[str, object] = {}   # "original" -> the library's own `_add_point` while the shim is in place


def _qdrant_version() -> str | None:
    try:
        return version("qdrant-client")
    except PackageNotFoundError:
        return None


def _appended(collection: object, key: object, current: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """`np.append(current, tail)` without copying `current` when it is the view this shim handed out last."""
    buffers: dict = collection.__dict__.setdefault(_STATE, {})
    n = len(current)
    held = buffers.get(key)
    if (held is not None and held[1] is current and held[0].dtype == tail.dtype
            and n + len(tail) <= len(held[0])):
        buffer = held[0]
    else:       # first append, an array the library replaced, a dtype change (bool -> int64) or a full buffer
        buffer = np.empty(max(_MIN_CAPACITY, 2 * (n + len(tail))), dtype=np.result_type(current, tail))
        buffer[:n] = current
    buffer[n:n + len(tail)] = tail
    view = buffer[:n + len(tail)]
    buffers[key] = (buffer, view)
    return view


def _make_add_point(original):
    def _add_point(self, point) -> None:   # noqa: ANN001 - qdrant_client's PointStruct
        per_vector = self.deleted_per_vector
        held = {name: arr for name, arr in per_vector.items()}
        deleted = self.deleted
        # the library appends to these empty stand-ins (same dtypes, so `np.append` promotes as it would)
        self.deleted = deleted[:0].copy()
        for name, arr in held.items():
            per_vector[name] = arr[:0].copy()
        try:
            original(self, point)
        except BaseException:
            self.deleted = deleted
            per_vector.update(held)
            raise
        self.deleted = _appended(self, None, deleted, self.deleted)
        for name, arr in held.items():
            per_vector[name] = _appended(self, name, arr, per_vector[name])

    _add_point.__doc__ = original.__doc__
    _add_point.__wrapped__ = original
    return _add_point


def install() -> bool:
    """Patch `LocalCollection._add_point` once per process; False (and a log line) on an unverified
    qdrant-client, which keeps its own behaviour."""
    if "original" in _installed:
        return True
    found = _qdrant_version()
    if found not in VERIFIED:
        log.info("qdrant-client %s: local-mode growth shim not applied (checked against %s only); imports of "
                 "large local collections stay quadratic", found, ", ".join(sorted(VERIFIED)))
        return False
    from qdrant_client.local.local_collection import LocalCollection
    original = LocalCollection._add_point
    _installed["original"] = original
    LocalCollection._add_point = _make_add_point(original)
    return True


def uninstall() -> None:
    """Put the library's own `_add_point` back (tests compare both)."""
    original = _installed.pop("original", None)
    if original is not None:
        from qdrant_client.local.local_collection import LocalCollection
        LocalCollection._add_point = original


def installed() -> bool:
    return "original" in _installed
