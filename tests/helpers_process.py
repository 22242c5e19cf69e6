"""Run part of a test in a real child process: killed by SIGKILL at a chosen write to the index (crash tests), or
without root's permission override (unreadable-folder tests).

The child is forked, so it starts at once with every module already imported; it talks to the parent only
through files and its exit code."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable

from mindnet.store.engine import Store

# every Store method that changes the index (collections, points, vectors, the import's token)
WRITE_METHODS = ("create", "drop", "upsert", "set_dense", "delete", "delete_where", "write_token")


def run_child(target: Callable[[], None], *, timeout: float = 120) -> int:
    """Run `target` in a forked process; its exit code (negative: killed by that signal). A child still
    running after `timeout` seconds is killed and the call fails: a hang is a failure, not a wait."""
    process = multiprocessing.get_context("fork").Process(target=target, daemon=True)
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        raise TimeoutError(f"the child process still ran after {timeout} s (hung)")
    return process.exitcode


def kill_after_writes(n: int, log_path: str | None = None) -> None:
    """In this process, SIGKILL ourselves right after the n-th write to the index has returned (nothing of the
    Python side runs after it: no finally, no atexit). Each write's method name is appended to `log_path`.
    Every store class (Qdrant Edge, a server) is wrapped: the import's writes all go through them."""
    count = 0

    def wrap(name: str, original: Callable) -> Callable:
        def write(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal count
            result = original(self, *args, **kwargs)
            count += 1
            if log_path:
                with open(log_path, "a", encoding="utf-8") as log:
                    log.write(f"{name}\n")
            if count == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        return write

    from mindnet.store.edge import EdgeStore
    from mindnet.store.server import ServerStore
    for cls in (EdgeStore, ServerStore):
        for name in WRITE_METHODS:
            setattr(cls, name, wrap(name, getattr(cls, name)))
    assert all(name in vars(Store) for name in WRITE_METHODS)


# Linux capabilities that let root read any file and list any folder whatever its mode
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_permission_override() -> None:
    """Make file modes bind this process even when it runs as root (as the tests and CI do here): drop
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its effective and permitted sets (capset(2)). Call it in a
    child before it starts threads: capabilities are per thread and new threads inherit them."""
    if os.geteuid() != 0:
        return                               # an ordinary user is bound by file modes already
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    mask = ~((1 << _CAP_DAC_OVERRIDE) | (1 << _CAP_DAC_READ_SEARCH)) & 0xFFFF_FFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
