"""Chunk points with or without their dense vector, and phase 2 of the import: filling the missing ones.

Phase 1 of an import writes every chunk with its payload and its BM25 sparse vector, and with its dense vector
only when the embedding cache already has it (no model needed). Qdrant lets a point omit a named vector:
such a point is absent from dense searches, present in sparse ones, a `without` filter finds it, and
`Store.set_dense` adds the dense vector later keeping payload and sparse vector (both engines). Phase 2
(`fill_vectors`) therefore needs nothing but the index: it scrolls the chunks without a dense vector, embeds
their text (cache first) and adds the vectors batch by batch. A run killed in phase 2 leaves chunks that simply
still lack a vector, and the next run fills them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindnet.backends import Embedder, EmbedOutcome
from mindnet.indexing.chunk_text import EMBED_FIELDS, embedding_text, keyword_text
from mindnet.indexing.sparse import sparse_doc_fn
from mindnet.store import collections as coll
from mindnet.store.engine import Point, Sparse, Store

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

log = logging.getLogger(__name__)

def chunk_points(nodes: list[TextNode], vectors: dict[str, list[float]]) -> list[Point]:
    """Chunk points for parser nodes: the payload llama-index's QdrantVectorStore writes (so its readers and
    `metadata_dict_to_node` work) plus the note's folders (for folder filters), the BM25 vector of its
    `keyword_text`, and the dense vector when `vectors` (by chunk id) has one."""
    if not nodes:
        return []
    from llama_index.core.vector_stores.utils import node_to_metadata_dict  # only when notes are written
    copies = [_as_point_node(n) for n in nodes]
    indices, values = sparse_doc_fn([keyword_text(c.metadata, c.get_content()) for c in copies])
    points = []
    for node, copy, idx, val in zip(nodes, copies, indices, values, strict=True):
        payload = node_to_metadata_dict(copy, remove_text=False, flat_metadata=False)
        payload["folders"] = coll.folders_of(str(node.metadata.get("path", "")))
        points.append(Point(copy.id_, payload, vectors.get(node.node_id), Sparse(idx, val)))
    return points


def _as_point_node(node: TextNode) -> TextNode:
    """A copy whose id (and neighbour ids) are Qdrant point UUIDs; the chunk id stays in metadata."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo
    # shallow: the copy only gets new ids, and a deep copy of every chunk's metadata cost 6% of a large import
    copy = node.model_copy()
    copy.relationships = dict(node.relationships)
    copy.id_ = coll.point_id(node.node_id)
    for rel in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT):
        if rel in copy.relationships:
            copy.relationships[rel] = RelatedNodeInfo(node_id=coll.point_id(copy.relationships[rel].node_id))
    return copy


@dataclass
class FillReport:
    chunks: int = 0            # chunks that got their vector
    failed: list[str] = field(default_factory=list)   # "path: error" of chunks the backend failed on
    failed_ids: set[str] = field(default_factory=set)  # their point ids (not sent again in the same import)
    seconds: float = 0.0
    stopped: bool = False      # stopped early on request (more work arrived); the rest waits for the next run
    backend_error: str | None = None   # a whole batch failed: the backend is down, phase 2 stopped


class VectorFeed:
    """Chunks phase 1 has just written without a dense vector, handed to an embedding worker while phase 1 goes
    on (`Mindnet.ingest`): the backend starts on the first notes written instead of waiting for the last. Phase 1
    never waits for it; the texts it holds are those of the plan, already in memory. Thread-safe."""

    def __init__(self) -> None:
        self._items: list[tuple[str, str, str]] = []     # (chunk point id, text to embed, note path)
        self._cond = threading.Condition()
        self._closed = False
        self.fed = 0                 # chunks handed over so far

    def put(self, items: list[tuple[str, str, str]]) -> None:
        if not items:
            return
        with self._cond:
            if self._closed:
                return
            self._items.extend(items)
            self.fed += len(items)
            self._cond.notify_all()

    def close(self) -> None:
        """Phase 1 ended (or the worker gave up): nothing more comes; what is queued is still taken."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def take(self, size: int, grace: float = 0.05) -> list[tuple[str, str, str]]:
        """Up to `size` chunks, as soon as there are any (the backend is idle meanwhile), after at most `grace`
        seconds more for a full round; [] when closed and empty."""
        with self._cond:
            while not self._items and not self._closed:
                self._cond.wait()
            deadline = time.monotonic() + grace
            while len(self._items) < size and not self._closed and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            part, self._items = self._items[:size], self._items[size:]
            return part


async def afill_vectors(store: Store, embedder: Embedder, *,
                        lock: AbstractContextManager | None = None, progress: Callable[[int], None] | None = None,
                        should_stop: Callable[[], bool] | None = None, batch: int | None = None,
                        skip: set[str] | frozenset = frozenset()) -> FillReport:
    """Phase 2: embed every chunk that has no dense vector yet and add it, `batch` chunks per backend call
    (default: the embedder's batch size), its parallel calls in flight. `lock` guards each read and write of
    the index, never the embedding; `should_stop()` is asked after each batch (more work arrived: the caller
    runs phase 1 for it first, then calls this again). Chunks rewritten meanwhile keep no stale vector: each
    write checks that the chunk still holds the text that was embedded. Chunks in `skip` (point ids the
    backend failed on a moment ago, beside phase 1) are left out.

    The next batches are embedding while one is written (in a worker thread), so a fast backend (Ollama with
    parallel calls) does not sit idle during the index writes."""
    lock = lock or nullcontext()
    with lock:
        todo = [(r.id, embedding_text(r.payload), str(r.payload.get("path", "?")))
                for r in store.scroll("chunks", coll.WITHOUT_DENSE, payload=[*EMBED_FIELDS, "path"])
                if r.id not in skip]
    size = max(1, batch or embedder.batch_size)   # one backend call per round
    parts = [todo[i:i + size] for i in range(0, len(todo), size)]
    parts.reverse()

    async def next_part() -> list[tuple[str, str, str]]:
        return parts.pop() if parts else []

    def stop() -> bool:      # asked only while batches remain: a run that did everything did not stop early
        return bool(parts) and should_stop is not None and should_stop()

    return await _embed_rounds(lambda: store, embedder, next_part, lock=lock, progress=progress, should_stop=stop)


async def afeed_vectors(store: Callable[[], Store], embedder: Embedder, feed: VectorFeed, *,
                        lock: AbstractContextManager | None = None, progress: Callable[[int], None] | None = None
                        ) -> FillReport:
    """Embed the chunks `feed` hands over, one backend call per round and the embedder's parallel calls in
    flight, until it is closed and empty (or the backend is down: the feed is closed and the chunks wait for
    phase 2). `store()` is called at the first write."""
    size = max(1, embedder.batch_size)

    async def next_part() -> list[tuple[str, str, str]]:
        return await asyncio.to_thread(feed.take, size)

    try:
        return await _embed_rounds(store, embedder, next_part, lock=lock or nullcontext(), progress=progress,
                                   should_stop=None)
    finally:
        feed.close()


async def _embed_rounds(store: Callable[[], Store], embedder: Embedder,
                        next_part: Callable[[], Awaitable[list[tuple[str, str, str]]]], *,
                        lock: AbstractContextManager,
                        progress: Callable[[int], None] | None, should_stop: Callable[[], bool] | None
                        ) -> FillReport:
    """Rounds of (chunk point id, text, note path) from `next_part()` ([] ends), each one backend call, embedded
    and written. The embedder's `parallel` rounds are in flight at once, and a new one starts as soon as one
    returns, before its vectors are written: the backend never waits for the index writes nor for the slowest
    call of a group. A chunk not (or no longer) in the index with that text gets no vector: its vector is in the
    embedding cache, where phase 1 finds it when it writes the chunk."""
    report = FillReport()
    start = time.perf_counter()
    fetching = asyncio.Lock()        # one round takes from the source at a time (in order)

    async def embed() -> tuple[dict[str, str], dict[str, str], EmbedOutcome] | None:
        async with fetching:
            part = await next_part()
        if not part:
            return None
        texts = {pid: text for pid, text, _ in part}
        where = {text: path for _, text, path in part}
        outcome = await embedder.aembed_many(list(texts.values()), what=lambda t, where=where: where.get(t, "?"))
        return texts, where, outcome

    def write(ready: dict[str, list[float]], texts: dict[str, str]) -> dict[str, list[float]]:
        with lock:
            if not store().exists("chunks"):   # embedded while phase 1 plans: it writes them
                return {}
            # a phase 1 may have rewritten or removed some of these chunks meanwhile (a server writes saved
            # notes while it embeds): only chunks that still hold the embedded text get the vector
            now = {r.id: embedding_text(r.payload) for r in store().retrieve("chunks", list(ready),
                                                                            payload=EMBED_FIELDS)}
            ready = {pid: v for pid, v in ready.items() if now.get(pid) == texts[pid]}
            store().set_dense("chunks", ready)
        return ready

    depth = max(1, embedder.parallel)
    flying: set[asyncio.Future] = set()
    ended = False                   # the source is exhausted, the backend is down or a stop was asked for

    def top_up() -> None:
        while not ended and len(flying) < depth:
            flying.add(asyncio.ensure_future(embed()))

    top_up()
    try:
        while flying:
            done, _ = await asyncio.wait(flying, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                flying.discard(task)
                result = task.result()
                if result is None:
                    ended = True
                    continue
                texts, where, outcome = result
                ready = {pid: outcome.vectors[t] for pid, t in texts.items() if t in outcome.vectors}
                if not ready and len(texts) > 1:   # the backend failed on every text: it is down; next run retries
                    report.backend_error = str(next(iter(outcome.failed.values()), "no vectors returned"))
                    ended = True
                    break
                if should_stop is not None and should_stop():
                    report.stopped = ended = True
                top_up()                        # the next rounds embed while this one is written
                report.failed += [f"{where[t]}: {outcome.failed[t]}" for t in texts.values() if t in outcome.failed]
                report.failed_ids |= {pid for pid, t in texts.items() if t in outcome.failed}
                embedded = len(ready)     # (a chunk phase 1 has not written yet takes its vector from the cache)
                if ready:
                    ready = await asyncio.to_thread(write, ready, texts)
                report.chunks += len(ready)
                if progress:
                    progress(embedded)
            if report.backend_error or report.stopped:
                break
    finally:
        for task in flying:      # stopped or failed early: rounds in flight are not written (their vectors
            task.cancel()        # still reach the embedding cache, so the next run finds them there)
        for task in flying:
            with contextlib.suppress(BaseException):
                await task
    report.seconds = time.perf_counter() - start
    return report
