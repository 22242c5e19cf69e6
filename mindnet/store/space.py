"""Free space on the embedded index's disk.

Qdrant Edge writes through memory maps into preallocated sparse files (32 MiB pages, blocks allocated as they are
touched). On a full disk the kernel answers such a write with SIGBUS: the process dies mid-write, `mindnet serve`
included, and the collection being written is left damaged. So every write first checks that the disk keeps
`min_free` bytes free and otherwise stops with a message that says so, before the engine meets a full disk. The
import that stops is resumed by the next one (its plan is written as it goes).
"""

from __future__ import annotations

import os
from pathlib import Path

from mindnet.errors import DataWriteError

MB = 1024 * 1024
DEFAULT_MIN_FREE_MB = 256.0


def free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def used_bytes(folder: Path) -> int:
    """Bytes the files under `folder` take on disk (allocated blocks, not their sparse sizes)."""
    return sum(blocks for blocks, _ in _files(folder))


def hole_bytes(folder: Path) -> int:
    """Bytes of the files under `folder` not yet on disk: what touching every mapped page could still take
    (on tmpfs even reading a hole through a shared map allocates it)."""
    return sum(max(size - blocks, 0) for blocks, size in _files(folder))


def _files(folder: Path) -> list[tuple[int, int]]:
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            found.append((st.st_blocks * 512, st.st_size))
    return found


class SpaceGuard:
    def __init__(self, folder: Path, min_free_mb: float = DEFAULT_MIN_FREE_MB) -> None:
        self.folder = Path(folder)
        self.min_free = int(min_free_mb * MB)

    def check_open(self, shard: Path) -> None:
        """Before a shard is loaded (which maps its files): the space its holes could take, up to `min_free`."""
        if self.min_free > 0 and (free := self.free()) is not None:
            need = min(self.min_free, hole_bytes(shard))
            if free < need:
                raise DataWriteError(
                    f"{shard}: the disk has {free / MB:.1f} MB free; opening the collection may need up to "
                    f"{need / MB:.0f} MB (Qdrant Edge maps its files into memory and cannot survive a full disk), "
                    f"so it was not opened and nothing was changed. Fix: free some space on that disk.",
                    path=str(shard))

    def free(self) -> int | None:
        try:
            return free_bytes(self.folder)
        except OSError:
            return None     # a folder statvfs cannot see (some network mounts): the engine's own errors remain

    def check(self, need: int = 0, what: str = "write to the index") -> None:
        """Raise DataWriteError unless the disk has `min_free` + `need` bytes free; nothing has been written."""
        if self.min_free <= 0 and need <= 0:
            return
        free = self.free()
        if free is None or free >= self.min_free + need:
            return
        raise DataWriteError(
            f"{self.folder}: the disk has {free / MB:.1f} MB free, less than the {(self.min_free + need) / MB:.0f} "
            f"MB mindnet keeps free before it writes (MINDNET_MIN_FREE_MB={self.min_free / MB:g}; Qdrant Edge "
            f"cannot survive a full disk); stopped before the {what}, so the index is as the last complete write "
            f"left it. Fix: free some space on that disk, then run `mindnet ingest` (it continues where this "
            f"import stopped).", path=str(self.folder))
