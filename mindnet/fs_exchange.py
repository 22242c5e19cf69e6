"""The system's atomic exchange of two file names, for `mindnet.safe_write.replace`: Linux
`renameat2(RENAME_EXCHANGE)`, macOS `renamex_np(RENAME_SWAP)`, loaded once through ctypes; None where there is
none (Windows, or a libc without it). Apart from `safe_write` because it is the platform binding, not the policy.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2        # linux/fs.h
_RENAME_SWAP = 0x2          # macOS stdio.h


def _load_exchange() -> Callable[[Path, Path], None] | None:
    """The system's atomic exchange of two names, or None where there is none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        fn = libc.renameat2
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int

        def call(a: Path, b: Path) -> int:
            return fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    elif sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        fn = libc.renamex_np
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int

        def call(a: Path, b: Path) -> int:
            return fn(os.fsencode(a), os.fsencode(b), _RENAME_SWAP)
    else:
        return None

    def exchange(a: Path, b: Path) -> None:
        if call(a, b) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(b))
    return exchange


_exchange: list[Callable[[Path, Path], None] | None] = []


def exchange_function() -> Callable[[Path, Path], None] | None:
    if not _exchange:
        _exchange.append(_load_exchange())
    return _exchange[0]
