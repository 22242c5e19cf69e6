"""The link graph's file (mindnet.retrieval.graph_file): written at import time, loaded at start when it is current,
and rebuilt - never trusted - when it is missing, stale, corrupt or of another format; incremental imports keep
it current by patching the notes that changed, to exactly what a full build gives."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fake_ollama import FakeOllama
from helpers_vault import copy_sample_vault, fake_settings

from mindnet.retrieval import graph_file as snapshot
from mindnet.retrieval.graph import EdgeIndex, GraphStats
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet


@pytest.fixture()
def app(tmp_path: Path):
    copy_sample_vault(tmp_path / "vault")
    with FakeOllama() as server:
        app = Mindnet(fake_settings(tmp_path, server.url))
        app.ingest()
        yield app
        app.close()


def snap_path(app: Mindnet) -> Path:
    path = snapshot.graph_path(app.store)
    assert path is not None
    return path


def reopen(app: Mindnet) -> snapshot.Opened:
    """Open as a new process would: nothing cached in this one."""
    snapshot.forget(app.store)
    return snapshot.open_graph(app.store)


def same_data(a: snapshot.GraphData, b: snapshot.GraphData) -> None:
    assert a.digest == b.digest
    assert (a.note_ids, a.titles, a.nodes, a.kinds) == (b.note_ids, b.titles, b.nodes, b.kinds)
    for name in ("edge_src", "edge_dst", "edge_conf", "edge_kind", "in_degree", "out_degree", "pr_rel", "linked"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert [a.edge_payload(i) for i in range(len(a.edge_src))] == [b.edge_payload(i) for i in range(len(b.edge_src))]


def test_the_import_writes_a_current_graph_file_that_a_new_process_loads(app: Mindnet) -> None:
    assert snap_path(app).exists()
    assert snapshot.graph_status(app.store) == "current"
    opened = reopen(app)
    assert opened.status == "loaded"
    same_data(opened.data, snapshot.build(app.store))
    assert snapshot.graph_status(app.store) == "current"


def test_a_graph_file_with_the_index_token_opens_without_reading_the_note_records(
        app: Mindnet, monkeypatch: pytest.MonkeyPatch) -> None:
    token = app.store.read_token()
    assert token and snapshot.read_meta(snap_path(app))["token"] == token
    scrolled: list[str] = []
    real = type(app.store).scroll

    def spy(store, kind, *args, **kwargs):
        scrolled.append(kind)
        return real(store, kind, *args, **kwargs)

    monkeypatch.setattr(type(app.store), "scroll", spy)
    opened = reopen(app)
    assert (opened.status, scrolled) == ("loaded", [])
    assert snapshot.graph_status(app.store) == "current" and scrolled == []
    # an import that died half-way leaves no token: the digest decides again (here: still the same index)
    app.store.write_token(None)
    opened = reopen(app)
    assert opened.status == "loaded" and "notes" in scrolled
    assert opened.data.token == ""


def test_a_graph_file_with_another_token_is_not_trusted_by_it(app: Mindnet) -> None:
    data = snapshot.load(snap_path(app))
    stale = snapshot.replace(data, note_ids=data.note_ids[:-1] + ["gone"], token="an-older-token")
    snapshot.save(stale, snap_path(app))
    opened = reopen(app)
    assert opened.status == "loaded"          # the digest still matches: the file's token is not relied on
    app.store.write_token("a-newer-token")
    snapshot.save(snapshot.replace(data, digest="other", token="an-older-token"), snap_path(app))
    opened = reopen(app)
    assert opened.status in ("patched", "rebuilt (stale)")
    same_data(opened.data, snapshot.build(app.store))
    assert opened.data.token == "a-newer-token"


def test_the_graph_holds_every_link_edge_payload_as_stored(app: Mindnet) -> None:
    data = reopen(app).data
    stored = [r.payload for r in app.store.scroll("edges")
              if r.payload["kind"] not in snapshot.STRUCTURAL and r.payload["resolved"]
              and r.payload["note_id"] != snapshot.note_of(r.payload["target_id"])]
    assert len(stored) > 20
    by_id = {e["edge_id"]: e for e in stored}
    assert {data.edge_payload(i)["edge_id"] for i in range(len(data.edge_src))} == set(by_id)
    assert all(data.edge_payload(i) == by_id[data.edge_payload(i)["edge_id"]] for i in range(len(data.edge_src)))
    # strongest first: the CSR slices rely on it
    keys = [(-data.edge_payload(i)["confidence"], data.edge_payload(i)["edge_id"]) for i in range(len(data.edge_src))]
    assert keys == sorted(keys)


def test_a_missing_graph_file_is_rebuilt_and_written(app: Mindnet) -> None:
    snap_path(app).unlink()
    assert snapshot.graph_status(app.store) == "missing"
    opened = reopen(app)
    assert opened.status == "rebuilt (missing)"
    assert snap_path(app).exists() and reopen(app).status == "loaded"


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "bounds", "format"])
def test_a_corrupt_or_foreign_graph_file_is_rebuilt_never_trusted(app: Mindnet, damage: str) -> None:
    path = snap_path(app)
    good = snapshot.load(path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "flip":             # one byte inside a stored array: the zip CRC catches it
        raw = bytearray(path.read_bytes())
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("edge_conf.npy")
        raw[info.header_offset + 200] ^= 0xFF
        path.write_bytes(bytes(raw))
    elif damage == "garbage":
        path.write_bytes(b"not a graph file")
    elif damage == "bounds":           # well-formed file, impossible content (an edge to node 10**6)
        good.edge_dst = good.edge_dst.copy()
        good.edge_dst[0] = 10**6
        snapshot.save(good, path)
    else:                              # written by another version of the format
        monkey = snapshot.FORMAT
        try:
            snapshot.FORMAT = monkey + 1
            snapshot.save(good, path)
        finally:
            snapshot.FORMAT = monkey
    assert snapshot.graph_status(app.store) in ("corrupt", "stale", "current")
    with pytest.raises(snapshot.GraphFileError):
        snapshot.load(path)
    opened = reopen(app)
    assert opened.status == ("rebuilt (other format)" if damage == "format" else opened.status)
    assert opened.status.startswith("rebuilt (corrupt" if damage != "format" else "rebuilt (other format")
    same_data(opened.data, snapshot.build(app.store))
    assert reopen(app).status == "loaded"


def test_a_stale_graph_file_is_patched_or_rebuilt_with_what_the_index_now_holds(
        app: Mindnet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "old.npz"
    shutil.copy(snap_path(app), old)
    note = tmp_path / "vault" / "concepts" / "Zebrafisch.md"
    note.write_text("---\ntitle: Zebrafisch\n---\nDer Zebrafisch verweist auf [[Qdrant]].\n", encoding="utf-8")
    app.ingest()
    shutil.copy(old, snap_path(app))          # the index moved on; the file is the old one
    assert snapshot.graph_status(app.store) == "stale"
    opened = reopen(app)
    assert opened.status == "patched"                 # one new note: its rows are read, the rest kept
    assert "Zebrafisch" in opened.data.titles
    assert canonical(opened.data) == canonical(snapshot.build(app.store))
    assert reopen(app).status == "loaded"             # and written
    shutil.copy(old, snap_path(app))
    monkeypatch.setattr(snapshot, "PATCH_MIN", 0)
    monkeypatch.setattr(snapshot, "PATCH_SHARE", 0.0)
    opened = reopen(app)
    assert opened.status == "rebuilt (stale)"         # too much changed for a patch: read everything
    same_data(opened.data, snapshot.build(app.store))


def test_a_stale_graph_reads_every_note_s_stamp_and_the_whole_record_only_of_the_notes_that_changed(
        app: Mindnet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a stale graph file compares every note's stamp (id, fingerprint, edges hash) and reads the full
    record (chunks, fields, edge ids) of the changed notes alone: at 30,000 notes the two reads of every whole
    record took 5.6 s of opening after a one-note change."""
    old = tmp_path / "old.npz"
    shutil.copy(snap_path(app), old)
    note = tmp_path / "vault" / "concepts" / "bm25.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n\nNeu: [[Ollama]].\n", encoding="utf-8")
    assert app.ingest().changed == 1
    shutil.copy(old, snap_path(app))
    reads: list[tuple[str, object, int | None]] = []
    scroll, retrieve = app.store.scroll, app.store.retrieve
    monkeypatch.setattr(app.store, "scroll", lambda kind, *a, **k: reads.append(
        (kind, k.get("payload"), None)) or scroll(kind, *a, **k))
    monkeypatch.setattr(app.store, "retrieve", lambda kind, ids, **k: reads.append(
        (kind, k.get("payload"), len(ids))) or retrieve(kind, ids, **k))
    opened = reopen(app)
    assert opened.status == "patched"
    notes = [(payload, n) for kind, payload, n in reads if kind == "notes"]
    assert notes and all(payload == snapshot.STAMP for payload, n in notes if n is None)     # every note: stamps
    assert [n for _, n in notes if n is not None] == [1]                   # one whole record: the changed note
    assert canonical(opened.data) == canonical(snapshot.build(app.store))


def test_an_incremental_import_leaves_a_current_graph_file_and_the_search_sees_it(app: Mindnet, tmp_path: Path
                                                                                  ) -> None:
    request = QueryRequest(query="Zebrafisch Aquarium", mode="hybrid", top_k=3)
    assert app.retriever.search(request).nodes[0].node.metadata["title"] != "Zebrafisch"
    before = snapshot.load(snap_path(app)).digest
    note = tmp_path / "vault" / "concepts" / "Zebrafisch.md"
    note.write_text("---\ntitle: Zebrafisch\n---\nDer Zebrafisch im Aquarium verweist auf [[Qdrant]].\n",
                    encoding="utf-8")
    report = app.ingest()
    assert report.new == 1
    assert snapshot.load(snap_path(app)).digest != before
    assert snapshot.graph_status(app.store) == "current"
    hit = app.retriever.search(request).nodes[0].node.metadata
    assert hit["title"] == "Zebrafisch"
    assert app.retriever.graph_status == "current"      # adopted from the import, not read again
    note.unlink()                                        # a deletion too
    app.ingest()
    assert snapshot.graph_status(app.store) == "current"
    assert "Zebrafisch" not in reopen(app).data.titles


def test_an_unchanged_reimport_does_not_rebuild(app: Mindnet, monkeypatch: pytest.MonkeyPatch) -> None:
    built = []
    monkeypatch.setattr(snapshot, "build", lambda *a: built.append(a))
    snapshot.forget(app.store)
    app.ingest()
    assert built == [] and snapshot.graph_status(app.store) == "current"


def test_the_figures_of_the_file_equal_those_of_the_edges_read_directly(app: Mindnet) -> None:
    data = reopen(app).data
    stats = GraphStats.from_data(data, 10.0)
    from_edges = EdgeIndex([r.payload for r in app.store.scroll("edges")]).graph_stats(app.store.count("notes"), 10.0)
    assert stats.in_degree == from_edges.in_degree and stats.out_degree == from_edges.out_degree
    assert stats.notes == from_edges.notes
    assert stats.pr_rel == pytest.approx(from_edges.pr_rel, rel=1e-9)


def test_a_server_keeps_no_graph_file() -> None:
    from qdrant_client import QdrantClient

    from mindnet.store.server import ServerStore
    store = ServerStore(QdrantClient(location=":memory:"), "t")     # qdrant-client's API, as a server speaks it
    assert snapshot.graph_path(store) is None
    assert snapshot.graph_status(store) == "none"
    opened = snapshot.open_graph(store)      # no collections: an empty graph, built in memory
    assert (opened.status, opened.data.note_ids, opened.data.nodes) == ("built", [], [])


def test_the_graph_file_is_replaced_atomically(app: Mindnet, monkeypatch: pytest.MonkeyPatch) -> None:
    path = snap_path(app)
    before = path.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", fail)
    with pytest.raises(OSError):
        snapshot.save(snapshot.load(path), path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    assert snapshot.read_meta(path)["format"] == snapshot.FORMAT     # the old file, whole


def canonical(d: snapshot.GraphData) -> dict:
    """The graph's content independent of node numbering and note order (a patch appends nodes, a build numbers
    afresh)."""
    return {
        "notes": sorted(zip(d.note_ids, d.titles, d.note_fps, d.note_ehs, map(repr, d.note_meta), strict=True)),
        "edges": [(d.nodes[s], d.nodes[t], c, d.kinds[k], d.edge_payload(i)) for i, (s, t, c, k) in
                  enumerate(zip(d.edge_src.tolist(), d.edge_dst.tolist(), d.edge_conf.tolist(),
                                d.edge_kind.tolist(), strict=True))],
        "figures": {d.nodes[i]: (int(d.in_degree[i]), int(d.out_degree[i]), round(float(d.pr_rel[i]), 9))
                    for i in np.flatnonzero(d.linked).tolist()},
        "graph_notes": d.graph_notes, "digest": d.digest,
    }


@pytest.mark.parametrize("change", ["edit", "add", "delete", "link"])
def test_a_few_changed_notes_patch_the_graph_to_what_a_full_build_gives(app: Mindnet, tmp_path: Path,
                                                                           change: str) -> None:
    vault = tmp_path / "vault"
    if change == "edit":      # new text and new links
        note = vault / "concepts" / "bm25.md"
        note.write_text(note.read_text(encoding="utf-8") + "\n\nNeu: [[Qdrant]] und [[Ollama]] Zebrafisch.\n",
                        encoding="utf-8")
    elif change == "add":
        (vault / "concepts" / "Zebrafisch.md").write_text(
            "---\ntitle: Zebrafisch\ntags: [tiere]\n---\nDer Zebrafisch verweist auf [[Qdrant]].\n", encoding="utf-8")
    elif change == "delete":  # other notes' links into it turn unresolved: their edges change too
        (vault / "concepts" / "qdrant.md").unlink()
    else:                     # a note links one more note
        note = vault / "concepts" / "pagerank.md"
        note.write_text(note.read_text(encoding="utf-8") + "\n\nSiehe [[Chunking]].\n", encoding="utf-8")
    report = app.ingest()
    assert report.new + report.changed + report.deleted + report.edges_rewritten >= 1
    if change == "delete":
        assert report.edges_rewritten >= 1       # the notes linking to it: their edges alone are rewritten
    assert snapshot.graph_status(app.store) == "current"
    patched = snapshot.load(snap_path(app))
    assert canonical(patched) == canonical(snapshot.build(app.store))


def test_the_import_patches_rather_than_rebuilds(app: Mindnet, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    built = []
    real_build = snapshot.build
    monkeypatch.setattr(snapshot, "build", lambda *a: built.append(a) or real_build(*a))
    (tmp_path / "vault" / "concepts" / "Zebrafisch.md").write_text("---\ntitle: Zebrafisch\n---\n[[Qdrant]]\n",
                                                                   encoding="utf-8")
    app.ingest()
    assert built == []
    assert app.retriever.graph_status in ("current", "patched")
    assert "Zebrafisch" in reopen(app).data.titles


def test_many_changed_notes_are_built_from_scratch(app: Mindnet, monkeypatch: pytest.MonkeyPatch) -> None:
    old = reopen(app).data
    stale = snapshot.GraphData(**{**old.__dict__, "note_fps": ["x"] * len(old.note_fps), "digest": "old"})
    assert snapshot.patch(stale, app.store) is None or len(old.note_ids) <= snapshot.PATCH_MIN
    monkeypatch.setattr(snapshot, "PATCH_MIN", 0)
    assert snapshot.patch(stale, app.store) is None       # every note changed: build instead


def test_the_graph_file_is_parsed_with_the_collector_paused_and_left_as_it_was(
        app: Mindnet, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import json
    collecting, real = [], json.loads

    def loads(text, *args, **kwargs):       # noqa: ANN001, ANN002, ANN003, ANN202 - json.loads's own
        collecting.append(gc.isenabled())
        return real(text, *args, **kwargs)
    monkeypatch.setattr(snapshot.json, "loads", loads)
    assert gc.isenabled()
    data = snapshot.load(snap_path(app))
    monkeypatch.undo()
    assert data.note_ids and collecting == [False, False]    # the meta and the strings: no collection between
    assert gc.isenabled()


def test_opening_the_index_moves_the_graph_out_of_the_collectors_view(app: Mindnet) -> None:
    import gc
    gc.unfreeze()
    with FakeOllama() as server:
        fresh = Mindnet(app.settings.model_copy(update={"ollama_url": server.url}))
    app.close()
    snapshot.forget(fresh.store)
    try:
        _ = fresh.searcher                       # opens the index and reads the link graph
        assert gc.get_freeze_count() > 0
    finally:
        fresh.close()
        gc.unfreeze()
