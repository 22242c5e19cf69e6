"""Every call into Qdrant Edge stays short (`mindnet.store.edge_pages`): qdrant-edge-py holds the interpreter
lock for a whole call, so one long call stops the server's event loop and /health with it. Writes, deletes,
retrieves and scrolls go in pages, and new shards are made by a child process. Checked as what the engine was
sent (points per call), never as a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from mindnet.store.collections import WITHOUT_DENSE, point_id
from mindnet.store.edge import EdgeStore
from mindnet.store.engine import Point, Sparse, Where

# the bounds of mindnet.store.edge_pages (PAGE_POINTS, PAGE_BYTES, SCROLL_PAGE), spelled out so that this file
# also runs against a mindnet without them
PAGE_POINTS, PAGE_BYTES, SCROLL_PAGE = 256, 256 * 1024, 256


class Spy:
    """An Edge shard that records, for every update, how many points it added or removed, and for every scroll
    and retrieve how many points came back."""

    def __init__(self, shard: Any) -> None:
        self.shard, self.updates, self.reads = shard, [], []

    def _count(self) -> int:
        return self.shard.count(qe.CountRequest(exact=True))

    def update(self, op: Any) -> None:
        before = self._count()
        self.shard.update(op)
        self.updates.append(abs(self._count() - before))

    def scroll(self, request: Any) -> Any:
        points, offset = self.shard.scroll(request)
        self.reads.append(len(points))
        return points, offset

    def retrieve(self, *args: Any) -> Any:
        points = self.shard.retrieve(*args)
        self.reads.append(len(points))
        return points

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


def edge(i: int, note: str) -> Point:
    return Point(point_id(f"e{i}"), {"edge_id": f"e{i}", "note_id": note, "source_id": note, "target_id": f"t{i}",
                                     "kind": "references", "rule_id": "link", "confidence": 1.0, "scope": "note"})


@pytest.fixture
def store(tmp_path: Path) -> EdgeStore:
    s = EdgeStore(tmp_path / "index", "t")
    s.create(4)
    yield s
    s.close()


def spy(store: EdgeStore, kind: str) -> Spy:
    store._shards[kind] = Spy(store._shard(kind))
    return store._shards[kind]


def test_a_large_write_reaches_the_engine_in_pages(store: EdgeStore) -> None:
    shard = spy(store, "edges")
    store.upsert("edges", [edge(i, f"n{i % 7}") for i in range(2000)])
    assert store.count("edges") == 2000
    assert max(shard.updates) <= PAGE_POINTS and sum(shard.updates) == 2000


def test_large_payloads_go_in_pages_by_size(store: EdgeStore) -> None:
    shard = spy(store, "notes")
    text = "x" * (PAGE_BYTES // 3)
    store.upsert("notes", [Point(point_id(f"n{i}"), {"note_id": f"n{i}", "fulltext": text}) for i in range(6)])
    assert shard.updates == [2, 2, 2]


def test_a_point_larger_than_a_page_is_written_alone(store: EdgeStore) -> None:
    shard = spy(store, "notes")
    big = "y" * (2 * PAGE_BYTES)        # a 2 MB note's record is one point however large
    store.upsert("notes", [Point(point_id(f"n{i}"), {"note_id": f"n{i}", "fulltext": t})
                           for i, t in enumerate(["a", big, "b"])])
    store.upsert("notes", [Point(point_id("n9"), {"note_id": "n9", "fulltext": big})])
    assert shard.updates == [1, 1, 1, 1] and store.count("notes") == 4


def test_a_delete_by_filter_and_by_ids_goes_in_pages(store: EdgeStore) -> None:
    store.upsert("edges", [edge(i, "big" if i < 1500 else "small") for i in range(1600)])
    shard = spy(store, "edges")
    store.delete_where("edges", Where.field("note_id", "big"))
    assert store.count("edges") == 100
    assert max(shard.updates) <= PAGE_POINTS and sum(shard.updates) == 1500
    assert max(shard.reads) <= SCROLL_PAGE


def test_scroll_and_retrieve_read_in_pages(store: EdgeStore) -> None:
    store.upsert("edges", [edge(i, "n") for i in range(1000)])
    shard = spy(store, "edges")
    assert len(list(store.scroll("edges"))) == 1000
    assert len(store.retrieve("edges", [point_id(f"e{i}") for i in range(1000)])) == 1000
    assert len(shard.reads) >= 2 * 1000 // SCROLL_PAGE and max(shard.reads) <= max(SCROLL_PAGE, PAGE_POINTS)


def test_vectors_are_set_in_pages(store: EdgeStore) -> None:
    store.upsert("chunks", [Point(point_id(f"c{i}"), {"chunk_id": f"c{i}"}, sparse=Sparse([1], [1.0]))
                            for i in range(600)])
    shard = spy(store, "chunks")
    store.set_dense("chunks", {point_id(f"c{i}"): [1.0, 0.0, 0.0, 0.0] for i in range(600)})
    assert len(shard.updates) == -(-600 // PAGE_POINTS)
    assert store.count("chunks", WITHOUT_DENSE) == 0


def test_new_shards_are_made_outside_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating a shard and its payload indexes held the interpreter lock 100-400 ms per call: a child makes
    them, this process only opens them (here, creating a shard in this process fails)."""
    real = qe.EdgeShard

    class OpenOnly:
        load = staticmethod(real.load)

        @staticmethod
        def create(*args: Any) -> Any:
            raise AssertionError("a shard was created in the server's process")

    monkeypatch.setattr(qe, "EdgeShard", OpenOnly)
    store = EdgeStore(tmp_path / "index", "t")
    try:
        store.create(4)
        store.upsert("edges", [edge(i, "n1" if i % 2 else "n2") for i in range(10)])
        assert [r.payload["edge_id"] for r in store.scroll("edges", Where.field("note_id", "n1"))] \
            == sorted((f"e{i}" for i in range(1, 10, 2)), key=lambda e: point_id(e))
        assert store.dim() == 4
    finally:
        store.close()
    monkeypatch.setattr(qe, "EdgeShard", real)
    reopened = EdgeStore(tmp_path / "index", "t")      # and it is a proper shard on disk, with its indexes
    try:
        assert reopened.count("edges") == 10
        schema = reopened._shard("edges").info().payload_schema
        assert {"note_id", "source_id", "target_id"} <= set(schema)
    finally:
        reopened.close()


@pytest.mark.parametrize(("sizes", "limit", "max_bytes", "expected"), [
    ([1] * 5, 2, None, [2, 2, 1]),
    ([1] * 4, 10, 2, [2, 2]),
    ([5, 1, 1], 10, 3, [1, 2]),          # a point larger than the bound goes alone
    ([1, 5, 1], 10, 3, [1, 1, 1]),
    ([], 3, 3, []),
])
def test_pages_bound_count_and_bytes(sizes: list[int], limit: int, max_bytes: int | None, expected: list[int]
                                     ) -> None:
    from mindnet.store.edge_pages import pages
    got = list(pages(sizes, limit=limit, max_bytes=max_bytes, size=(lambda n: n) if max_bytes else None))
    assert [len(p) for p in got] == expected and [x for p in got for x in p] == sizes


def test_the_bounds_here_are_the_modules() -> None:
    from mindnet.store import edge_pages
    assert (edge_pages.PAGE_POINTS, edge_pages.PAGE_BYTES, edge_pages.SCROLL_PAGE) == (PAGE_POINTS, PAGE_BYTES,
                                                                                       SCROLL_PAGE)
