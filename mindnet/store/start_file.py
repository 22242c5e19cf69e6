"""The start file: what a search needs while local Qdrant is still opening.

Opening a local Qdrant folder unpickles every point it holds (10,000 notes, 25k chunks and 270k edges: ~20 s
on 2 cores). The index snapshot (`mindnet.store.snapshot`) already holds the mirrors a hybrid search uses
(BM25, filter fields, graph, titles); what it lacks is each chunk's dense vector and its payload (the text shown
with a hit). The start file holds those, in the snapshot's chunk order:

    <qdrant folder>/mindnet-<prefix>.start.npz

The payloads (~7 KB of JSON per chunk, LlamaIndex's node JSON included; ~1.5 KB compressed) sit in a second file,
memory-mapped:

    <qdrant folder>/mindnet-<prefix>.start.payloads

It is written when mindnet closes a local index it opened (the end of `mindnet ingest`, of `mindnet serve`),
and trusted at the next start only while Qdrant's own files are exactly as they were then: it records the size,
mtime and inode of `meta.json` and of every collection's `storage.sqlite` (Qdrant rewrites them on every
change), and the digest of the snapshot it belongs to. Any write since (another tool, an import killed
half-way) changes them, and the file is ignored, never trusted; the next clean close writes it again.
`mindnet.store.startup_reader.StartupReader` answers the retriever from it until the real client is open.
"""

from __future__ import annotations

import json
import logging
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient

from mindnet.store.collections import DENSE, names
from mindnet.store.memory import no_gc
from mindnet.store.reader import _local_collection
from mindnet.store.snapshot import IndexData, SnapshotError, read_meta, replace_atomically, save

log = logging.getLogger(__name__)
FORMAT = 2                          # 2: payloads zlib-compressed


def start_path(folder: Path, prefix: str) -> Path:
    return Path(folder) / f"mindnet-{prefix}.start.npz"


def payloads_path(folder: Path, prefix: str) -> Path:
    """The chunk payloads as one UTF-8 blob beside the start file, memory-mapped (only the hits shown are read:
    10,000 notes hold ~170 MB of payloads, whose reading alone would cost a second)."""
    return Path(folder) / f"mindnet-{prefix}.start.payloads"


def _file_state(path: Path) -> list:
    try:
        st = path.stat()
    except OSError:
        return [path.name, -1, -1, -1]
    return [path.name, st.st_size, st.st_mtime_ns, st.st_ino]


class MappedStrings:
    """Strings in a memory-mapped file, each zlib-compressed UTF-8 (payload JSON compresses ~4x), cut by
    offsets."""

    def __init__(self, path: Path, offsets: np.ndarray) -> None:
        size = path.stat().st_size
        if len(offsets) and (offsets[0] != 0 or offsets[-1] != size or np.any(np.diff(offsets) < 0)):
            raise SnapshotError(f"{path}: payload offsets do not fit the file ({size} bytes)")
        self._data = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> str:
        try:
            return zlib.decompress(self._data[int(self._offsets[i]):int(self._offsets[i + 1])].tobytes()).decode()
        except (zlib.error, UnicodeDecodeError) as exc:
            raise SnapshotError(f"start file payload {i} is damaged ({exc})") from exc


def _pack_bytes(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=len(items)), out=offsets[1:])
    return np.frombuffer(b"".join(items), dtype=np.uint8), offsets


def snapshot_file(folder: Path, prefix: str) -> Path:
    return Path(folder) / f"mindnet-{prefix}.snapshot.npz"


def qdrant_files_state(folder: Path) -> list[list]:
    """What Qdrant has on disk, as (file, size, mtime_ns, inode) rows: any write changes one of them."""
    folder = Path(folder)
    # with its WAL journal (mindnet.store.collections.tune_local_storage) SQLite keeps recent commits in
    # storage.sqlite-wal until the last connection closes: a left-over journal (a killed process) counts too
    files = [folder / "meta.json", *sorted((folder / "collection").glob("*/storage.sqlite*"))]
    rows = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            rows.append([str(f.relative_to(folder)), -1, -1, -1])
            continue
        rows.append([str(f.relative_to(folder)), st.st_size, st.st_mtime_ns, st.st_ino])
    return rows


@dataclass
class StartData:
    """Each snapshot chunk row's dense vector (unit length, as Qdrant stores it; zeros without one) and payload."""
    vectors: np.ndarray          # float32 [chunks, dim]
    has_vector: np.ndarray       # bool [chunks]
    payloads: MappedStrings      # JSON text per chunk
    counts: dict[str, int]       # points per collection when written

    def payload(self, row: int) -> dict:
        return json.loads(self.payloads[row])


def why_not_current(folder: Path, prefix: str) -> str | None:
    """None when the start file matches Qdrant's files and the snapshot, else the reason it does not."""
    path = start_path(folder, prefix)
    if not path.exists():
        return "no start file"
    try:
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(f["meta"].tobytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        return f"unreadable start file ({type(exc).__name__})"
    if meta.get("format") != FORMAT:
        return f"start file format {meta.get('format')}, this mindnet reads {FORMAT}"
    if meta.get("qdrant_files") != qdrant_files_state(folder):
        return "Qdrant's files changed since the start file was written"
    if meta.get("payloads_file") != _file_state(payloads_path(folder, prefix)):
        return "the start file's payloads changed"
    try:
        snap = read_meta(snapshot_file(folder, prefix))
    except SnapshotError:
        return "no readable index snapshot"
    if snap.get("digest") != meta.get("digest"):
        return "the index snapshot changed since the start file was written"
    return None


@dataclass
class PendingStart:
    """A start file read from the open client, written by `finish` once the client has closed (closing merges
    SQLite's journal into Qdrant's files, so only then are they as the next start will find them)."""
    folder: Path
    prefix: str
    digest: str
    vectors: np.ndarray
    has_vector: np.ndarray
    blob: np.ndarray
    offsets: np.ndarray
    counts: dict[str, int]

    def finish(self) -> None:
        path, blob_path = start_path(self.folder, self.prefix), payloads_path(self.folder, self.prefix)
        path.unlink(missing_ok=True)    # no start file names a payload file that is being replaced
        replace_atomically(blob_path, lambda fh: fh.write(self.blob.tobytes()))
        meta = {"format": FORMAT, "digest": self.digest, "qdrant_files": qdrant_files_state(self.folder),
                "payloads_file": _file_state(blob_path), "counts": self.counts, "created": time.time()}
        replace_atomically(path, lambda fh: np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                                           vectors=self.vectors, has_vector=self.has_vector,
                                           payload_offsets=self.offsets))


def collect(client: QdrantClient, prefix: str, data: IndexData, folder: Path) -> PendingStart | None:
    """What the start file for `data` (the current snapshot) holds, read from the open local client; None when
    the client's columns are not laid out as expected or do not match the snapshot."""
    col = _local_collection(client, names(prefix)["chunks"])
    if col is None or DENSE not in getattr(col, "vectors", {}) or DENSE not in getattr(col, "deleted_per_vector", {}):
        return None
    started = time.perf_counter()
    with no_gc():
        rows = [col.ids.get(pid) for pid in data.chunk_pids]
        if any(r is None for r in rows):
            log.info("start file not written: the snapshot's chunks differ from Qdrant's")
            return None
        idx = np.asarray(rows, dtype=np.int64)
        dim = col.vectors[DENSE].shape[1]
        vectors = np.asarray(col.vectors[DENSE][idx], dtype=np.float32) if len(idx) else np.zeros((0, dim), np.float32)
        has = ~np.asarray(col.deleted_per_vector[DENSE], dtype=bool)[idx] if len(idx) else np.zeros(0, bool)
        vectors[~has] = 0.0
        blob, offsets = _pack_bytes([zlib.compress(json.dumps(col.payload[i] or {}, separators=(",", ":"),
                                                              ensure_ascii=False).encode(), 1) for i in rows])
    counts = {kind: len(getattr(_local_collection(client, name), "ids", {}) or {})
              for kind, name in names(prefix).items()}
    try:
        on_disk = read_meta(snapshot_file(folder, prefix)).get("digest")
    except SnapshotError:
        on_disk = None
    if on_disk != data.digest:     # the start file pairs with the snapshot on disk: make it `data`
        save(data, snapshot_file(folder, prefix))
    log.info("start file read: %d chunks in %.2f s", len(rows), time.perf_counter() - started)
    return PendingStart(Path(folder), prefix, data.digest, vectors, has, blob, offsets, counts)


def load(folder: Path, prefix: str, data: IndexData) -> StartData:
    """The start file for `data`; SnapshotError when it is unreadable or does not fit the snapshot."""
    path = start_path(folder, prefix)
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        meta = json.loads(arrays["meta"].tobytes())
        start = StartData(arrays["vectors"], arrays["has_vector"].astype(bool),
                          MappedStrings(payloads_path(folder, prefix), arrays["payload_offsets"]), meta["counts"])
    except SnapshotError:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise SnapshotError(f"{path}: unreadable start file ({type(exc).__name__}: {exc})") from exc
    n = len(data.chunk_pids)
    if meta.get("digest") != data.digest or start.vectors.ndim != 2 or len(start.vectors) != n \
            or len(start.has_vector) != n or len(start.payloads) != n:
        raise SnapshotError(f"{path}: start file does not fit the index snapshot")
    return start
