"""A record of an embedded index's shard files as mindnet last left them: `mindnet check` hashes the files and,
when they are what the record says, judges the index without reading every payload.

    <index folder>/<prefix>.files.json    {"format": 1, "files": {path: [size, mtime_ns, sha1 of its data]}}

with a path relative to the index folder for each file of the prefix's three shard folders. `EdgeStore` deletes
the record before its first write in a process, writes it again when an import (or a live save) has stored its
token, and refreshes it when it closes the shards: Qdrant Edge rewrites some files when it opens or closes a
shard, so the record describes the files as the last process left them.

Measured with qdrant-edge-py 0.9 (2026-12-06): a read-only session (open, scroll, count, facet, query,
retrieve, close) rewrites four small files per segment with the same bytes (`tracker.dat`, `segment.json`,
`status.dat`, `flags_a.dat`: only their mtime changes); a flush does the same; the first open after writes
removes the segments' `tracker_journal.dat` files; the first open after create rewrites `edge_config.json`.

Recording trusts the file's size and mtime for a file this process did not see change (its hash is reused);
checking never does: it hashes every byte of data (a file changed in place with its size and mtime kept is
found), about 1.4 GB at 30,000 notes (2 GB with the holes), in two threads (hashlib releases the interpreter
lock on large buffers). SHA-1 as a checksum: it finds damage, not a deliberate forgery.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mindnet.store.folder import write_json

log = logging.getLogger(__name__)
RECORD_FORMAT = 1
READ_BYTES = 1 << 22
HASH_THREADS = 2
Entries = dict[str, list]        # path relative to the index folder -> [size, mtime_ns, hex digest]


def _hash(path: Path) -> str:
    """The file's data and where it lies: the holes of a sparse file (Edge's preallocated pages) are skipped by
    SEEK_DATA/SEEK_HOLE, their places hashed instead (a file whose holes moved counts as changed)."""
    digest = hashlib.sha1(usedforsecurity=False)     # with the CPU's SHA instructions: the fastest in hashlib
    fd = os.open(path, os.O_RDONLY)
    try:
        size, pos = os.fstat(fd).st_size, 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:          # ENXIO: a hole up to the end
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            digest.update(f"{start}-{end};".encode())
            while start < end:
                block = os.pread(fd, min(READ_BYTES, end - start), start)
                if not block:
                    break
                digest.update(block)
                start += len(block)
            pos = end
    finally:
        os.close(fd)
    return digest.hexdigest()


class FileRecord:
    """The record of the shard folders `shards` (names under `folder`) of one collection prefix."""

    def __init__(self, folder: Path, prefix: str, shards: list[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / f"{prefix}.files.json"
        self.shards = shards

    def read(self) -> Entries | None:
        """The recorded files (None: no record, or one this version cannot read)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.info("%s cannot be read (%s): the next check reads every payload", self.path, exc)
            return None
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT or not isinstance(data.get("files"), dict):
            return None
        return data["files"]

    def stats(self) -> dict[str, tuple[int, int]]:
        """Every file of the shard folders now: path -> (size, mtime_ns)."""
        out: dict[str, tuple[int, int]] = {}
        for shard in self.shards:
            for root, _dirs, files in os.walk(self.folder / shard):
                for name in files:
                    path = Path(root) / name
                    try:
                        st = path.stat()
                    except FileNotFoundError:
                        continue
                    out[str(path.relative_to(self.folder))] = (st.st_size, st.st_mtime_ns)
        return out

    def snapshot(self, previous: Entries | None = None) -> Entries:
        """The files now, hashed; a file whose size and mtime are those in `previous` keeps its hash there."""
        stats = self.stats()
        previous = previous or {}
        todo = [rel for rel, (size, mtime) in stats.items() if previous.get(rel, [None, None])[:2] != [size, mtime]]
        with ThreadPoolExecutor(HASH_THREADS) as pool:
            hashed = dict(zip(todo, pool.map(lambda rel: _hash(self.folder / rel), todo), strict=True))
        return {rel: [size, mtime, hashed[rel] if rel in hashed else previous[rel][2]]
                for rel, (size, mtime) in sorted(stats.items())}

    def verify(self) -> tuple[Entries | None, list[str] | None]:
        """Every byte of the files hashed against the record: (the files now, the paths that differ from the
        record: missing, new, or another size or content). (None, None) without a record."""
        recorded = self.read()
        if recorded is None:
            return None, None
        now = self.snapshot()
        differ = sorted(rel for rel in recorded.keys() | now.keys()
                        if rel not in recorded or rel not in now
                        or [recorded[rel][0], recorded[rel][2]] != [now[rel][0], now[rel][2]])
        return now, differ

    def write(self, entries: Entries) -> None:
        try:
            write_json(self.path, {"format": RECORD_FORMAT, "files": entries})
        except OSError as exc:      # a full disk: the next check reads every payload
            log.warning("cannot write %s: %s", self.path, exc)

    def drop(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:      # left stale: it no longer matches the files, the next check reads everything
            log.warning("cannot remove %s: %s", self.path, exc)


class RecordKeeper:
    """When an `EdgeStore` drops, writes and refreshes its record (see the module's doc)."""

    def __init__(self, record: FileRecord) -> None:
        self.record = record
        self._last: Entries | None = None     # the entries this process recorded or verified last
        self._opened = False                  # a shard was opened (the files' state before it is known)
        self._wrote = False                   # this process wrote since the record was last written
        self._dropped = False                 # the record is deleted (until `committed`)
        self._due = False                     # an import committed: write the record again at close

    def before_open(self) -> None:
        """Before this process opens its first shard: a record whose sizes and mtimes all match is refreshed at
        close (the files Edge rewrites on open and close are hashed again, the others keep their hashes)."""
        if self._opened:
            return
        self._opened = True
        recorded = self.record.read()
        if recorded is not None and {rel: tuple(e[:2]) for rel, e in recorded.items()} == self.record.stats():
            self._last = recorded

    def verify(self) -> list[str] | None:
        """The files that differ from the record ([]: none; None: no record). Before any shard is opened."""
        now, differ = self.record.verify()
        if differ == [] and not self._wrote:
            self._last = now
        return differ

    def written(self) -> None:
        """Before a write: the record no longer describes the files."""
        self._wrote, self._due = True, False
        if not self._dropped:
            self.record.drop()
            self._dropped = True

    def committed(self) -> None:
        """An import stored its token (after a flush): record the files as it left them."""
        if self._wrote or self._due:
            self._last = self.record.snapshot(self._last)
            self.record.write(self._last)
            self._wrote, self._dropped, self._due = False, False, True

    def closed(self) -> None:
        """After the shards are closed: the record again, with what opening and closing rewrote."""
        if self._last is not None and not self._wrote and (self._due or self._opened):
            entries = self.record.snapshot(self._last)
            if entries != self._last:
                self.record.write(entries)
