"""The local-mode growth shim (mindnet/store/local_growth.py): a patched local collection behaves exactly like
the library's own, operation by operation, and its flag arrays no longer copy on every new point."""

from __future__ import annotations

import logging
import uuid

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.local import local_collection

from mindnet.store import local_growth
from mindnet.store.client import open_local

DIM = 8


@pytest.fixture
def shim_off():
    """Run with the library's own `_add_point`; the shim is put back afterwards if it was in place."""
    was = local_growth.installed()
    local_growth.uninstall()
    yield
    if was:
        local_growth.install()


def _pid(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"p{i}"))


def _vector(i: int) -> list[float]:
    rng = np.random.default_rng(i)
    return rng.normal(size=DIM).round(4).tolist()


def _chunk(i: int, *, dense: bool = True, tag: str = "a") -> qm.PointStruct:
    vector: dict = {"sparse": qm.SparseVector(indices=[i % 7, 7 + i % 5], values=[1.0, 0.5 + i % 3])}
    if dense:
        vector["dense"] = _vector(i)
    return qm.PointStruct(id=_pid(i), vector=vector, payload={"n": i, "tag": tag, "note_id": f"note{i % 9}"})


def _edge(i: int) -> qm.PointStruct:
    return qm.PointStruct(id=_pid(10_000 + i), vector={}, payload={"source_id": f"c{i}", "target_id": f"n{i % 13}",
                                                                   "kind": "mentions" if i % 3 else "references"})


def _state(client: QdrantClient) -> dict:
    """Everything a reader can see of both collections, plus the library's internal flag arrays."""
    out: dict = {}
    tag_b = qm.Filter(must=[qm.FieldCondition(key="tag", match=qm.MatchValue(value="b"))])
    for name in ("chunks", "edges"):
        points, _ = client.scroll(name, limit=10_000, with_payload=True, with_vectors=True)
        out[f"{name} scroll"] = sorted((str(p.id), repr(p.payload), repr(p.vector)) for p in points)
        out[f"{name} count"] = client.count(name, exact=True).count
        coll = client._client.collections[name]
        out[f"{name} deleted"] = (coll.deleted.dtype.str, coll.deleted.tolist())
        out[f"{name} per vector"] = {k: (v.dtype.str, v.tolist()) for k, v in coll.deleted_per_vector.items()}
    out["count b"] = client.count("chunks", count_filter=tag_b, exact=True).count
    out["edges by kind"] = client.count("edges", count_filter=qm.Filter(must=[qm.FieldCondition(
        key="kind", match=qm.MatchValue(value="references"))]), exact=True).count
    for using, query in (("dense", _vector(3)),
                         ("sparse", qm.SparseVector(indices=[1, 8], values=[1.0, 1.0]))):
        for flt in (None, tag_b):
            hits = client.query_points("chunks", query=query, using=using, query_filter=flt, limit=15,
                                       with_payload=True).points
            out[f"search {using} {flt is not None}"] = [(str(h.id), round(h.score, 5), h.payload["n"]) for h in hits]
    out["retrieve"] = sorted((str(p.id), p.payload["n"]) for p in
                             client.retrieve("chunks", ids=[_pid(i) for i in range(0, 90, 7)]))
    return out


def _scenario(folder) -> list[dict]:
    """Create, upsert (some points without a dense vector), overwrite, delete by id and by filter, revive,
    grow again, then reopen from disk: the state after each step."""
    states = []
    client = QdrantClient(path=str(folder))
    client.create_collection("chunks", vectors_config={"dense": qm.VectorParams(size=DIM, distance=qm.Distance.COSINE)},
                             sparse_vectors_config={"sparse": qm.SparseVectorParams(modifier=qm.Modifier.IDF)})
    client.create_collection("edges", vectors_config={})
    client.upsert("chunks", points=[_chunk(i, dense=i % 4 != 0) for i in range(60)])
    client.upsert("edges", points=[_edge(i) for i in range(150)])
    states.append(_state(client))
    client.upsert("chunks", points=[_chunk(i, tag="b") for i in range(0, 60, 5)])          # overwrite
    client.delete("chunks", points_selector=qm.PointIdsList(points=[_pid(i) for i in range(1, 60, 6)]))
    client.delete("edges", points_selector=qm.FilterSelector(filter=qm.Filter(must=[qm.FieldCondition(
        key="kind", match=qm.MatchValue(value="references"))])))
    states.append(_state(client))
    client.upsert("chunks", points=[_chunk(i, tag="b") for i in range(1, 60, 12)])          # revive deleted
    client.upsert("chunks", points=[_chunk(i, dense=i % 3 != 0) for i in range(60, 130)])    # grow again
    client.upsert("edges", points=[_edge(i) for i in range(150, 400)])
    client.update_vectors("chunks", points=[qm.PointVectors(id=_pid(i), vector={"dense": _vector(i + 1)})
                                            for i in range(0, 130, 4)])
    states.append(_state(client))
    client.close()
    client = QdrantClient(path=str(folder))          # persistence: the collections load from disk
    states.append(_state(client))
    client.upsert("chunks", points=[_chunk(i) for i in range(130, 160)])
    client.upsert("edges", points=[_edge(i) for i in range(400, 450)])
    states.append(_state(client))
    client.close()
    return states


def test_patched_local_collection_behaves_like_the_library(tmp_path, shim_off):
    original = _scenario(tmp_path / "original")
    assert local_growth.install(), "the installed qdrant-client is not one the shim was verified against"
    assert local_collection.np is not np and local_collection.np.append is local_growth.growing_append
    patched = _scenario(tmp_path / "patched")
    assert len(original) == len(patched) == 5
    for step, (a, b) in enumerate(zip(original, patched, strict=True)):
        for key in a:
            assert a[key] == b[key], f"step {step}: {key} differs"
    # the scenario exercised what it should: deletions, vector-less points, both flag dtypes
    assert original[1]["chunks count"] < 60 and original[2]["edges count"] > 300
    assert any(original[0]["chunks per vector"]["dense"][1])


def test_new_points_no_longer_copy_the_flag_arrays(shim_off):
    """Without the shim every new point copies `deleted` (np.append): it never shares memory with the array
    before. With it, the next point's flags are written into the same buffer."""
    def grows_in_place() -> bool:
        client = QdrantClient(location=":memory:")
        client.create_collection("edges", vectors_config={})
        client.upsert("edges", points=[_edge(i) for i in range(100)])
        coll = client._client.collections["edges"]
        before = coll.deleted
        client.upsert("edges", points=[_edge(100)])
        after = coll.deleted
        assert len(after) == 101 and not after.any()
        return np.shares_memory(before, after)

    assert not grows_in_place()
    local_growth.install()
    assert grows_in_place()


def test_open_local_installs_the_shim(tmp_path, shim_off):
    client = open_local(tmp_path / "q")
    try:
        assert local_growth.installed()
    finally:
        client.close()


def test_unverified_qdrant_client_is_left_alone(monkeypatch, caplog, shim_off):
    monkeypatch.setattr(local_growth, "_qdrant_version", lambda: "9.9.9")
    with caplog.at_level(logging.INFO, logger="mindnet.store.local_growth"):
        assert local_growth.install() is False
    assert local_collection.np is np and not local_growth.installed()
    assert "9.9.9" in caplog.text and "not applied" in caplog.text


def test_growing_append_gives_numpys_values_and_dtypes() -> None:
    grow = local_growth.growing_append
    a = grow(np.zeros(0, dtype=bool), 0)
    assert a.dtype == np.append(np.zeros(0, dtype=bool), 0).dtype        # bool + int: int64, as numpy
    for i in range(200):
        a = grow(a, i % 3 == 0)
    assert a.tolist() == [0] + [int(i % 3 == 0) for i in range(200)]
    old = a                                   # an older view appended to again: a copy, the newer one intact
    newer = grow(a, 7)
    other = grow(old, 9)
    assert newer[-1] == 7 and other[-1] == 9 and newer.tolist()[:-1] == other.tolist()[:-1]
    b = grow(newer, np.array([1.5, 2.5]))     # several values and a wider dtype, as numpy
    assert b.dtype == np.append(newer, np.array([1.5, 2.5])).dtype and b[-2:].tolist() == [1.5, 2.5]
    flat = np.zeros((2, 2))
    assert grow(flat, [[1, 1]], axis=0).tolist() == np.append(flat, [[1, 1]], axis=0).tolist()
    assert grow(flat, 1).tolist() == np.append(flat, 1).tolist()
