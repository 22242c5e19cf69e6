"""A shim for qdrant-client's local mode: amortised O(1) growth of its per-point deletion flags.

`LocalCollection._add_point` (qdrant-client 1.20.0) grows `self.deleted` and each `self.deleted_per_vector[name]`
by one element per new point with `np.append`, which copies the whole array: O(n) per point, O(n^2) per
collection. At 30,000 notes the edges collection takes 664,000 points in one import, and appending to an array
of hundreds of thousands of flags costs more the more there are.

The shim gives the module `qdrant_client.local.local_collection` a `np` whose `append` (the only `np.append` calls
in that module are those flag appends) writes the new flags into a backing buffer that grows geometrically and
returns a view of it of exactly the new length, when it is handed the latest view of such a buffer; anything
else (an array the library made itself, an old view, another shape or dtype) goes to numpy's own `np.append`
and, when 1-d, starts a buffer. The library's code is unchanged, its statements assign the result as before
(a reader in another thread sees the old array or the new one, as with numpy's), and the values and dtypes are
exactly numpy's: `tests/test_local_growth.py` compares a patched collection with an unpatched one operation by
operation. Every other `np` attribute is numpy's own.

Applied only to the qdrant-client versions it was checked against (`VERIFIED`): another version is left alone,
with a log line.
"""

from __future__ import annotations

import logging
import threading
import types
import weakref
from importlib.metadata import PackageNotFoundError, version

import numpy as np

log = logging.getLogger(__name__)

VERIFIED = frozenset({"1.20.0"})     # qdrant-client versions whose `np.append` use this shim was checked against
_MIN_CAPACITY = 64

# id of the latest view of each buffer -> (weak reference to that view, its buffer)
_latest: dict[int, tuple[weakref.ReferenceType, np.ndarray]] = {}
_lock = threading.RLock()    # (a view's weakref callback may run while it is held)
_dtypes: dict[tuple[np.dtype, np.dtype], np.dtype] = {}
_installed: dict[str, object] = {}   # "numpy" -> the module's own `np` while the shim is in place


def _qdrant_version() -> str | None:
    try:
        return version("qdrant-client")
    except PackageNotFoundError:
        return None


def _forget(key: int) -> None:
    with _lock:
        _latest.pop(key, None)


def _hand_out(buffer: np.ndarray, length: int) -> np.ndarray:
    view = buffer[:length]
    key = id(view)
    with _lock:
        _latest[key] = (weakref.ref(view, lambda _, key=key: _forget(key)), buffer)
    return view


def _buffer_of(arr: np.ndarray) -> np.ndarray | None:
    """The backing buffer when `arr` is the latest view handed out of one, else None."""
    with _lock:
        held = _latest.get(id(arr))
        if held is None or held[0]() is not arr:
            return None
        del _latest[id(arr)]     # from now on an older view: appending to it again must copy
        return held[1]


def growing_append(arr, values, axis=None):   # noqa: ANN001, ANN201 - numpy's signature
    """`np.append`, without copying `arr` when it is the latest view of a growth buffer."""
    if axis is not None or not isinstance(arr, np.ndarray) or arr.ndim != 1:
        return np.append(arr, values, axis=axis)
    tail = np.ravel(values)
    dtype = _dtypes.get((arr.dtype, tail.dtype))
    if dtype is None:       # the dtype numpy's append gives (it concatenates the two)
        dtype = _dtypes[(arr.dtype, tail.dtype)] = np.concatenate((arr[:0], tail[:0])).dtype
    n, extra = len(arr), len(tail)
    buffer = _buffer_of(arr)
    if buffer is None or buffer.dtype != dtype or n + extra > len(buffer):
        grown = np.empty(max(_MIN_CAPACITY, 2 * (n + extra)), dtype=dtype)
        grown[:n] = arr
        buffer = grown
    buffer[n:n + extra] = tail
    return _hand_out(buffer, n + extra)


class _NumpyWithGrowingAppend(types.ModuleType):
    """numpy's namespace with `append` replaced (attributes numpy loads lazily are looked up on numpy)."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self.__dict__.update({k: v for k, v in np.__dict__.items() if k not in ("__name__", "__spec__")})
        self.append = growing_append

    def __getattr__(self, name: str):   # noqa: ANN204 - only for names numpy resolves on demand
        return getattr(np, name)


def install() -> bool:
    """Give local mode's collection module the growing `np.append`, once per process; False (and a log line)
    on an unverified qdrant-client, which keeps its own behaviour."""
    if "numpy" in _installed:
        return True
    found = _qdrant_version()
    if found not in VERIFIED:
        log.info("qdrant-client %s: local-mode growth shim not applied (checked against %s only); imports of "
                 "large local collections stay quadratic", found, ", ".join(sorted(VERIFIED)))
        return False
    from qdrant_client.local import local_collection
    if getattr(local_collection, "np", None) is not np:
        log.info("qdrant-client %s: local_collection has no plain `np`; growth shim not applied", found)
        return False
    _installed["numpy"] = local_collection.np
    local_collection.np = _NumpyWithGrowingAppend()
    return True


def uninstall() -> None:
    """Give the module numpy itself back (tests compare both)."""
    own = _installed.pop("numpy", None)
    if own is not None:
        from qdrant_client.local import local_collection
        local_collection.np = own


def installed() -> bool:
    return "numpy" in _installed
