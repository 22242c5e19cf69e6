"""Keeping each call into Qdrant Edge short: writes and reads in pages, new shards made by a child process.

qdrant-edge-py holds the interpreter lock for the whole of every call, so while one call runs no other thread
of the process runs, the HTTP server's event loop included (`/health` waited 100-600 ms behind one call in the
reliability drill, `python -m benchmarks.drill`). Measured on 2 cores with a thread ticking every 5 ms beside:
an upsert of 20,000 384-d points stopped it for 612 ms, of 2,048 edges 53-75 ms, of 256 edges or chunks 2-3 ms;
creating a shard and its payload indexes 100-400 ms on a busy disk. So `EdgeStore` sends every write, delete,
retrieve and scroll in pages of at most `PAGE_POINTS` points (and about `PAGE_BYTES` of payload), and creates
new shards in a child process, then opens them (an Edge shard can be open in one process only, but one that
nobody has open yet can be made anywhere).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from mindnet.store.engine import Point

T = TypeVar("T")

PAGE_POINTS = 256           # points (or ids) per Edge call
PAGE_BYTES = 256 * 1024     # payload and vector bytes per write call (a bigger point goes alone)
SCROLL_PAGE = 256           # points per scroll call


def pages(items: Sequence[T], *, limit: int = PAGE_POINTS, max_bytes: int | None = None,
          size: Callable[[T], int] | None = None) -> Iterator[Sequence[T]]:
    """`items` in order, in pages of at most `limit` items and, with `size`, at most `max_bytes` bytes
    (an item larger than that is a page of its own)."""
    if size is None or max_bytes is None:
        for i in range(0, len(items), limit):
            yield items[i:i + limit]
        return
    start, used = 0, 0
    for i, item in enumerate(items):
        n = size(item)
        if i > start and (i - start >= limit or used + n > max_bytes):
            yield items[start:i]
            start, used = i, 0
        used += n
    if start < len(items):
        yield items[start:]


def size_of(points: Sequence[Point]) -> int:
    """A generous guess of the bytes a batch adds on disk (WAL and segment): payload text, vectors, overhead."""
    sample = points[: min(len(points), 16)]
    per = sum(len(str(p.payload)) + 8 * len(p.dense or ()) + 12 * len(p.sparse.indices if p.sparse else ()) + 512
              for p in sample) / len(sample)
    return int(2 * per * len(points))


def bytes_of(p: Point) -> int:
    """About the bytes of a point's payload and vectors (what a write call converts and stores)."""
    return len(str(p.payload)) + 8 * len(p.dense if p.dense is not None else ()) \
        + 12 * len(p.sparse.indices if p.sparse else ())


# runs in a child process: argv[1] is a JSON list of [path, dense size or null, {field: schema}]
_CREATE = """
import json, sys
import qdrant_edge as qe
from mindnet.store.edge_layout import chunks_config, keyword_index
SCHEMAS = {"keyword": qe.PayloadSchemaType.Keyword, "bool": qe.PayloadSchemaType.Bool}
for path, dim, dense, sparse, indexes in json.loads(sys.argv[1]):
    if dim:     # the chunks: memory-mapped once settled (edge_layout)
        config = chunks_config(dim, dense, sparse)
    else:
        config = qe.EdgeConfig(sparse_vectors={sparse: qe.EdgeSparseVectorParams()})
    shard = qe.EdgeShard.create(path, config)
    for name, schema in indexes.items():
        kind = keyword_index() if dim and schema == "keyword" else SCHEMAS[schema]
        shard.update(qe.UpdateOperation.create_field_index(name, kind))
    shard.flush()
    shard.close()
"""


class CreateFailed(Exception):
    """The child process that creates shards failed; its last lines of output say why."""


def create_aside(shards: list[tuple[Path, int | None, str, str, dict[str, str]]], timeout: float = 300) -> None:
    """Create these shards (folder, dense size or None for payload only, dense and sparse vector names,
    payload indexes) in a child process, so that this process's threads keep running meanwhile."""
    spec = json.dumps([[str(path), dim, dense, sparse, indexes] for path, dim, dense, sparse, indexes in shards])
    try:
        done = subprocess.run([sys.executable, "-c", _CREATE, spec], capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CreateFailed(str(exc)) from exc
    if done.returncode != 0:
        raise CreateFailed(" ".join((done.stderr or done.stdout).split())[-600:] or f"exit {done.returncode}")
