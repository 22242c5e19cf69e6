"""`EdgeStore.facet` (what `mindnet check` vouches for an index with): the counts per value of an indexed field
equal counting the stored payloads, after deletes, moves and payload updates, whether the engine answered from
its payload index's own counts (a tenth of the time) or counted every value exactly (when those do not add up)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import qdrant_edge as qe
from test_edge_pages import store

from mindnet.store.collections import point_id
from mindnet.store.edge import EdgeStore
from mindnet.store.engine import Point

__all__ = ["store"]     # test_edge_pages's fixture: an EdgeStore in a temp folder, 4-d


def chunk(i: int, note: str, tags: list[str]) -> Point:
    return Point(point_id(f"{note}#c{i:02d}"), {"chunk_id": f"{note}#c{i:02d}", "note_id": note, "tags": tags,
                                                 "type": "concept", "path": f"{note}.md", "folders": []})


def by_payload(store: EdgeStore, key: str) -> dict[Any, int]:
    counts: Counter = Counter()
    for r in store.scroll("chunks", payload=[key]):
        value = r.payload.get(key)
        counts.update(value if isinstance(value, list) else [] if value is None else [value])
    return dict(counts)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `exact` flag of every facet the engine is asked for."""
    flags: list[bool] = []
    real = qe.FacetRequest

    def request(key: str, **kw: Any) -> Any:
        flags.append(kw.get("exact", False))
        return real(key, **kw)
    monkeypatch.setattr(qe, "FacetRequest", request)
    return flags


def test_facets_equal_the_stored_payloads_after_deletes_moves_and_updates(store: EdgeStore, asked: list[bool]
                                                                          ) -> None:
    store.upsert("chunks", [chunk(i, f"n{i % 40}", [f"t{i % 3}", "all"]) for i in range(600)])
    store.optimize(hnsw=False)                       # an immutable, memory-mapped segment, as imports leave it
    store.delete("chunks", [point_id(f"n{i % 40}#c{i:02d}") for i in range(0, 600, 7)])
    store.upsert("chunks", [chunk(i, "moved", ["t9"]) for i in range(1, 600, 11)])     # same ids, another note
    store.upsert("chunks", [chunk(i, f"new{i}", ["t1"]) for i in range(600, 640)])
    for key in ("note_id", "chunk_id"):              # one value per point: the index's own counts
        asked.clear()
        assert store.facet("chunks", key) == by_payload(store, key)
        assert asked == [False], key
    asked.clear()                                    # tags: several per point, the counts add up to more than the
    assert store.facet("chunks", "tags") == by_payload(store, "tags")     # points: every value counted exactly
    assert asked == [False, True]
    assert store.facet("chunks", "ord") is None      # no payload index: not answered
