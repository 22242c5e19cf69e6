"""A real small file system for the full-disk tests: a tmpfs mounted where the test wants it (needs root; the
callers skip only when it cannot be mounted, and each has a variant that gets the same failure without a mount)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def mount_tmpfs(folder: Path, size_kb: int, *, without: str) -> None:
    """Mount a tmpfs of `size_kb` at `folder`; skip the test (naming `without`, the test that covers the same
    failure without a mount) when this machine cannot."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0755", "tmpfs", str(folder)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a small tmpfs here ({exc}); {without} gets the same failure without one")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or done.returncode}: needs root); "
                    f"{without} gets the same failure without one")


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


@contextmanager
def tmpfs(folder: Path, size_kb: int, *, without: str) -> Iterator[Path]:
    mount_tmpfs(folder, size_kb, without=without)
    try:
        yield folder
    finally:
        unmount(folder)


def fill(folder: Path, leave: int = 0) -> Path:
    """A file that takes the file system's free space but `leave` bytes (unbuffered: each write is one system
    call)."""
    filler = folder / ".filler"
    st = os.statvfs(folder)
    with filler.open("wb", buffering=0) as fh:
        if leave:
            fh.write(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))
            return filler
        for size in (1 << 16, 4096, 1):
            while True:
                try:
                    fh.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    return filler
