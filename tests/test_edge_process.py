"""`EdgeProcessStore`: the embedded index held by a child process (`mindnet serve`), on real Edge shards.

The import and retrieval contract on it is in test_store_contract.py (`edge-process`); here what the child
process adds: the server keeps answering what /health asks while the engine is busy, errors keep their class,
a killed child is reported and replaced, and a killed server leaves no child holding the folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from mindnet.errors import DataWriteError, DimensionMismatchError, StoreError, StoreLockedError
from mindnet.store.edge_process import EdgeProcessStore
from mindnet.store.engine import Point, Sparse
from mindnet.store.factory import open_folder
from mindnet.store.folder import holder_text

DIM = 4


def _points(n: int, start: int = 0) -> list[Point]:
    return [Point(str(uuid.UUID(int=i + 1)), {"chunk_id": f"c{i}", "note_id": f"n{i % 7}"},
                  dense=[1.0, float(i % 5), 0.5, float(i % 3)], sparse=Sparse([i % 11 + 1], [1.0]))
            for i in range(start, start + n)]


@pytest.fixture
def store(tmp_path: Path):
    s = EdgeProcessStore(tmp_path / "index", "t")
    s.create(DIM)
    yield s
    s.close()


def test_writes_and_reads_go_through_the_child(store: EdgeProcessStore) -> None:
    store.upsert("chunks", _points(2_500))
    assert store.count("chunks") == 2_500 and store.opened("chunks") and store.exists("chunks")
    assert store.dim() == DIM
    ids = [r.id for r in store.scroll("chunks", payload=["chunk_id"], page=700)]     # four round trips
    assert len(ids) == len(set(ids)) == 2_500
    first = next(iter(store.scroll("chunks", payload=False)))     # stopped early: the child forgets the scroll
    assert first.id in ids and store.count("chunks") == 2_500
    hits = store.search_dense([1.0, 4.0, 0.5, 2.0], 3, payload=True)
    assert len(hits) == 3 and hits[0].score >= hits[-1].score and hits[0].payload["chunk_id"]
    assert store.write_token("abc") and store.read_token() == "abc"


def test_big_calls_cross_in_pages_and_arrive_whole(store: EdgeProcessStore) -> None:
    """Pickling a call keeps the server's interpreter lock: a big write or read goes in pages (edge_pages)."""
    sent: list[tuple[str, int]] = []
    call = store._call

    def counting(method: str, args: tuple, kwargs: dict):
        sent.append((method, len(args[1]) if method in ("upsert", "set_dense", "retrieve") else 0))
        return call(method, args, kwargs)
    store._call = counting                # this instance only: what crosses the pipe, call by call
    points = _points(1_000)
    store.upsert("chunks", points)
    store.set_dense("chunks", {p.id: [0.5, 0.5, 0.5, 0.5] for p in points})
    got = store.retrieve("chunks", [p.id for p in points], dense=True)
    sizes = {m: [n for k, n in sent if k == m] for m in ("upsert", "set_dense", "retrieve")}
    assert all(len(v) == 4 and max(v) <= 256 and sum(v) == 1_000 for v in sizes.values()), sizes
    assert len(got) == 1_000 and {r.id for r in got} == {p.id for p in points}
    assert all(list(r.dense) == [0.5, 0.5, 0.5, 0.5] for r in got)


def test_errors_keep_their_class_and_fields(store: EdgeProcessStore, tmp_path: Path) -> None:
    with pytest.raises(DimensionMismatchError, match="8"):
        store.create(8)
    with pytest.raises(KeyError):                   # a caller's mistake stays one (no such collection)
        list(store.scroll("nope"))
    assert store.count("chunks") == 0               # and the child goes on
    full = EdgeProcessStore(tmp_path / "full", "t", min_free_mb=1e12)    # "the disk is full"
    try:
        with pytest.raises(DataWriteError, match="MINDNET_MIN_FREE_MB") as caught:
            full.create(DIM)
        assert caught.value.path == str(tmp_path / "full")
    finally:
        full.close()


def test_what_health_asks_is_answered_while_the_engine_is_busy(store: EdgeProcessStore) -> None:
    # the child is stopped in the middle of a call (as during a long flush): the server's thread waits for it
    # without the interpreter lock, and `exists` / `opened` (asked by every /health) do not wait at all
    store.upsert("chunks", _points(10))
    child = store.child_pid
    os.kill(child, signal.SIGSTOP)
    counted: list[int] = []
    caller = threading.Thread(target=lambda: counted.append(store.count("chunks")))
    try:
        caller.start()
        caller.join(0.5)
        assert caller.is_alive() and counted == []            # the call waits for the stopped child
        assert store.exists("chunks") and store.opened("chunks")
    finally:
        os.kill(child, signal.SIGCONT)
    caller.join(60)
    assert counted == [10]


def test_a_killed_child_is_reported_and_the_next_call_starts_a_new_one(store: EdgeProcessStore) -> None:
    store.upsert("chunks", _points(50))
    old = store.child_pid
    rows = store.scroll("chunks", payload=False, page=10)
    next(rows)
    os.kill(old, signal.SIGKILL)
    with pytest.raises(StoreError, match=r"the index process ended during `count` \(exit code -9\)"):
        store.count("chunks")
    assert store.count("chunks") == 50          # a new child, the same folder: what was written is there
    assert store.child_pid not in (old, None)
    with pytest.raises(StoreError, match="the index process that ran this scroll ended"):
        list(rows)


def test_the_folder_is_held_by_the_server_and_freed_when_it_dies(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    script = textwrap.dedent(f"""
        import sys, time
        from mindnet.store.factory import open_folder
        store = open_folder({str(folder)!r}, "t", process=True)
        store.create(4)
        print(store.child_pid, flush=True)
        time.sleep(600)
    """)
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(server.stdout.readline())
        assert f"process {server.pid}" in holder_text(folder)      # the server's id, not the child's
        with pytest.raises(StoreLockedError):
            open_folder(folder, "t")
        server.kill()
        server.wait(30)
        assert _gone(child)                       # the child saw the pipe close and ended
    finally:
        server.kill()
    again = open_folder(folder, "t")              # nobody holds it any more
    try:
        assert again.dim() == 4
    finally:
        again.close()


def _gone(pid: int, wait: float = 60) -> bool:
    """The process ended (no more, or a zombie its parent has not reaped yet), waited for up to `wait` s."""
    end = time.monotonic() + wait
    while True:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
                return True
        except OSError:
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.1)


def test_close_ends_the_child_and_releases_the_folder(tmp_path: Path) -> None:
    store = open_folder(tmp_path / "index", "t", process=True)
    store.create(DIM)
    child = store.child_pid
    store.close()
    assert store.child_pid is None and _gone(child)
    with pytest.raises(StoreError, match="was closed"):
        store.count("chunks")
    again = open_folder(tmp_path / "index", "t")
    again.close()


HOLD_SHARD = """
import sys, qdrant_edge as qe
shard = qe.EdgeShard.load(sys.argv[1], None)
print("open", flush=True)
sys.stdin.readline()
shard.close()
"""


def test_a_shard_another_process_still_closes_is_waited_for(tmp_path: Path, monkeypatch) -> None:
    # a killed server's index process finishes its call before it sees the pipe close: the next server's
    # open of the same shard waits for it instead of calling the collection damaged
    from mindnet.store import edge
    first = open_folder(tmp_path / "index", "t")
    first.create(DIM)
    first.upsert("chunks", _points(5))
    first.close()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_SHARD, str(tmp_path / "index" / "t_chunks")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "open"
    store = open_folder(tmp_path / "index", "t")
    try:
        counted: list[int] = []
        caller = threading.Thread(target=lambda: counted.append(store.count("chunks")))
        caller.start()
        caller.join(0.5)
        assert caller.is_alive() and counted == []        # waiting for the other process
        holder.stdin.close()
        holder.wait(30)
        caller.join(60)
        assert counted == [5]
        holder = subprocess.Popen([sys.executable, "-c", HOLD_SHARD, str(tmp_path / "index" / "t_notes")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "open"
        monkeypatch.setattr(edge, "WAL_WAIT", 0.4)
        with pytest.raises(StoreLockedError, match=r"t_notes: another process still has this collection open"):
            store.count("notes")
    finally:
        holder.kill()
        store.close()
