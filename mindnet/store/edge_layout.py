"""The chunks shard's layout on disk: segments that open in a tenth of a second instead of 1.4 s (issue 21).

An import writes into one appendable segment, which Qdrant Edge reads whole into memory when the shard is
opened: the dense vectors, the sparse vectors' inverted index (rebuilt at load) and the keyword payload indexes.
At 75,000 chunks (30,000 notes, 384-d) that took 1.4-2.4 s, holding the interpreter lock, before the first
search could run. After an import that wrote, `settle` has the engine rewrite the written segment into an
immutable one whose parts are memory-mapped files (`Memory.Cold`: dense vectors, sparse index, payload and its
keyword indexes), read from the page cache when a search touches them. Measured on the 30,000-note bench_scale
index (2 cores, load 7-12): opening the chunks shard 1.4-1.65 s -> 0.09-0.14 s; the rewrite of an index made
before (keyword indexes converted, then the segment rewritten) took 93 s, nothing embedded again.

Search results: the same hits in the same order for every bench_scale query in every mode. Dense search stays exact
below `dense.exact_below` (a full scan of the same vectors, the same scores), and the segment keeps no HNSW graph
there (`m=0`, nothing to build); past it, the HNSW graph is built as before. The immutable sparse index computes
BM25 with other float arithmetic than the appendable one: lexical scores differ in the last bits of a float (at
most 4e-8 in the bench; the ranking there did not change). Later writes (the live index) go to a new small
appendable segment; each `settle` rewrites only what grew past the engine's indexing threshold.

A shard's payload indexes are the ones `collections.SHARD_INDEXES` names; `index_upkeep` brings a shard an older
mindnet made to that set (at its next import that writes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import qdrant_edge as qe

from mindnet.store.collections import CHECK_INDEXES, LEFT_OUT

COLD = qe.Memory.Cold
# the engine's defaults for an HNSW graph (past dense.exact_below); m=0: a segment without one
HNSW = {"m": 16, "ef_construct": 100, "full_scan_threshold": 10_000}
LAYOUT_KEY = "chunks_layout"     # in the folder's meta (FolderMeta): the layout the chunks shard was settled to
UPKEPT = sorted(CHECK_INDEXES.keys() | LEFT_OUT.keys())   # shards whose indexes an older version made otherwise


def index_upkeep(kind: str, have: Iterable[str]) -> list[qe.UpdateOperation]:
    """What brings a shard made by an older version to today's payload indexes (`collections.SHARD_INDEXES`): the
    check indexes it lacks made, the ones Edge shards leave out dropped."""
    have = set(have)
    return [*(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword)
              for name in sorted(CHECK_INDEXES.get(kind, {}).keys() - have)),
            *(qe.UpdateOperation.delete_field_index(name) for name in sorted(have & LEFT_OUT.get(kind, set())))]


def layout_name(hnsw: bool) -> str:
    return "cold+hnsw" if hnsw else "cold"


def keyword_index() -> qe.KeywordIndexParams:
    """A keyword payload index memory-mapped once its segment is immutable (the engine's default is in RAM)."""
    return qe.KeywordIndexParams(memory=COLD)


def chunks_config(dim: int, dense: str, sparse: str, *, hnsw: bool = False) -> qe.EdgeConfig:
    """The chunks shard: dense (cosine) and sparse (IDF) vectors, payload, every part memory-mapped."""
    graph = qe.HnswIndexConfig(**{**HNSW, "m": HNSW["m"] if hnsw else 0})
    return qe.EdgeConfig(vectors={dense: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, memory=COLD,
                                                             hnsw_config=graph)},
                         sparse_vectors={sparse: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=COLD)},
                         payload_memory=COLD)


def warm_indexes(shard: qe.EdgeShard) -> list[str]:
    """The keyword payload indexes of `shard` still kept in RAM (an index made before this layout)."""
    warm = []
    for name, info in shard.info().payload_schema.items():
        params = info.params
        if info.data_type == qe.PayloadSchemaType.Keyword and (params is None or params.memory != COLD):
            warm.append(name)
    return sorted(warm)


def settle(path: str, dim: int, dense: str, sparse: str, hnsw: bool, reload: bool) -> None:
    """Rewrite the chunks shard at `path` (open nowhere else) into the layout above. With `reload` (the shard's
    config differs: an index made before, or HNSW switched on or off) it is opened with the new config, which the
    engine then applies to every segment; keyword indexes still in RAM are made again memory-mapped."""
    shard = qe.EdgeShard.load(path, chunks_config(dim, dense, sparse, hnsw=hnsw) if reload else None)
    try:
        for name in warm_indexes(shard):
            shard.update(qe.UpdateOperation.create_field_index(name, keyword_index()))
        shard.optimize()
        shard.flush()
    finally:
        shard.close()


# runs in a child process: argv[1] is the JSON list of settle's arguments
_SETTLE = "import json, sys; from mindnet.store.edge_layout import settle; settle(*json.loads(sys.argv[1]))"


class SettleFailed(Exception):
    """The child process that settles the shard failed; its last lines of output say why."""


def settle_aside(path: Path, dim: int, dense: str, sparse: str, *, hnsw: bool, reload: bool,
                 timeout: float = 6 * 3600) -> None:
    """`settle` in a child process: the engine holds the interpreter lock for the whole rewrite (a thread
    ticking every 5 ms beside an in-process settle of 12,446 chunks stood still for up to 14.6 s of its 35 s), so
    a server's threads keep running meanwhile. The caller closes the shard before and opens it again after."""
    spec = json.dumps([str(path), dim, dense, sparse, hnsw, reload])
    try:
        done = subprocess.run([sys.executable, "-c", _SETTLE, spec], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SettleFailed(str(exc)) from exc
    if done.returncode != 0:
        raise SettleFailed(" ".join((done.stderr or done.stdout).split())[-600:] or f"exit {done.returncode}")
