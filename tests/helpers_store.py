"""Index folders in tests: payloads of a collection, by kind ("notes", "chunks", "edges"), and sparse copies."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from mindnet.store.engine import Store


def payloads(store: Store, kind: str, fields: Sequence[str] | None = None) -> Iterator[dict]:
    """Every payload of the collection (only `fields` when given); nothing when it does not exist."""
    if store.exists(kind):
        for r in store.scroll(kind, payload=list(fields) if fields else True):
            yield r.payload


def copy_index_folder(source: Path, target: Path) -> Path:
    """`shutil.copytree` that keeps files sparse. Qdrant Edge preallocates its WAL and mmap pages (32 MiB each,
    holes on disk): a plain copy writes them out, about 0.5 GB per copy of even a four-note index."""
    return Path(shutil.copytree(source, target, copy_function=_copy_sparse))


def _copy_sparse(source: str, target: str, block: int = 1 << 20) -> None:
    with open(source, "rb") as src, open(target, "wb") as dst:
        while chunk := src.read(block):
            if chunk.count(0) == len(chunk):
                dst.seek(len(chunk), os.SEEK_CUR)     # a hole stays a hole
            else:
                dst.write(chunk)
        dst.truncate()
    shutil.copystat(source, target)
