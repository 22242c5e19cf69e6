"""mindnet.store.memory: the index's long-lived heap is frozen out of the garbage collector's walks (local
Qdrant's points when it opens, the search mirrors when they load), and what is frozen is still freed when it is
dropped: nothing in it is cyclic, so reference counting frees it without the collector."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
from helpers_vault import imported_sample_vault

from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.store.client import open_local
from mindnet.store.memory import long_lived


def test_opening_local_qdrant_freezes_its_points(tmp_path: Path) -> None:
    gc.unfreeze()
    client = open_local(tmp_path / "q")
    try:
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    finally:
        client.close()
        gc.unfreeze()


def test_long_lived_restores_the_collector_after_a_failed_load() -> None:
    with pytest.raises(ValueError), long_lived():
        assert not gc.isenabled()
        raise ValueError("a damaged file")
    assert gc.isenabled()
    gc.unfreeze()


def test_frozen_index_objects_are_freed_without_the_collector(tmp_path: Path) -> None:
    with imported_sample_vault(tmp_path) as settings:
        app = Mindnet(settings)
        retriever = app.retriever
        _ = app.client                          # local Qdrant itself, opened under `long_lived`
        app.query(QueryRequest(query="Reranker", mode="hybrid"))
        assert retriever._data is not None
        mirrors = [weakref.ref(o) for o in (retriever._data, retriever._lexical_index, retriever._edge_index,
                                            retriever._graph_stats)]
        index = [weakref.ref(o) for o in (app.client, app.client._client, retriever,
                                          *app.client._client.collections.values())]
        gc.disable()
        try:
            retriever.invalidate()              # an import changed the index: the old mirrors go
            assert [ref() is None for ref in mirrors] == [True] * len(mirrors)
            app.close()
            del app, retriever, _
            assert [ref() is None for ref in index] == [True] * len(index)
        finally:
            gc.enable()
            gc.unfreeze()
