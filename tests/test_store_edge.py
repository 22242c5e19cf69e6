"""The embedded engine's folder as a user meets it: an index of an older mindnet is rebuilt once from the vault and
the embedding cache, a damaged shard is named with the command that repairs it, a reading command creates
nothing, and the folder keeps every note's text to its owner."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from helpers_vault import copy_sample_vault, fake_settings, point_cli_at
from qdrant_client import QdrantClient, models

from mindnet.cli import main
from mindnet.errors import EmptyIndexError
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.store.collections import PAYLOAD_INDEXES
from mindnet.store.folder import legacy_files

CHUNK_INDEXES = PAYLOAD_INDEXES["chunks"]


@pytest.fixture
def env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample vault, and MINDNET_* pointing the CLI at this folder (index ./qdrant, prefix t)."""
    copy_sample_vault(tmp_path / "vault")
    settings = fake_settings(tmp_path, fake_ollama.url)
    return point_cli_at(tmp_path, fake_ollama.url, settings, monkeypatch)


def write_local_mode_index(folder: Path) -> None:
    """What mindnet before Qdrant Edge left: qdrant-client's local mode files, with a point in a collection."""
    client = QdrantClient(path=str(folder))
    client.create_collection("t_chunks", vectors_config={"text-dense": models.VectorParams(
        size=8, distance=models.Distance.COSINE)})
    client.upsert("t_chunks", [models.PointStruct(id=1, vector={"text-dense": [1.0] * 8}, payload={"x": 1})])
    client.close()
    (folder / "mindnet-t.snapshot.npz").write_bytes(b"old mirrors")


def test_an_index_of_an_older_mindnet_is_rebuilt_once_without_embedding_again(env: Path, fake_ollama, capsys
                                                                              ) -> None:
    assert main(["ingest"]) == 0                      # fills the embedding cache
    embedded = fake_ollama.count("/api/embed")
    for path in (env / "qdrant").iterdir():           # the folder as an older mindnet left it
        if path.is_dir():
            __import__("shutil").rmtree(path)
        else:
            path.unlink()
    write_local_mode_index(env / "qdrant")
    assert legacy_files(env / "qdrant")
    capsys.readouterr()
    assert main(["query", "Qdrant"]) == 2             # a reading command says what to do, and does nothing
    err = " ".join(capsys.readouterr().err.split())
    assert "built by an older mindnet" in err and "run `mindnet ingest` once" in err
    assert main(["ingest", "--json"]) == 0
    import json
    report = json.loads(capsys.readouterr().out)
    assert (report["new"], report["notes"], report["embedded_texts"]) == (30, 30, 0)    # vectors from the cache
    assert [n for n in report["notices"] if "rebuilt with Qdrant Edge" in n] and len(report["notices"]) == 1
    assert fake_ollama.count("/api/embed") - embedded <= 1     # at most the size probe, no chunk text
    assert legacy_files(env / "qdrant") == []                  # the old files are gone
    assert main(["check"]) == 0 and "index OK" in capsys.readouterr().out
    assert main(["ingest", "--json"]) == 0 and json.loads(capsys.readouterr().out)["notices"] == []


def test_a_reading_command_creates_no_index_folder(env: Path, capsys) -> None:
    assert main(["query", "Qdrant"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"no index at {(env / 'qdrant').resolve()}" in err and "mindnet ingest" in err
    assert not (env / "qdrant").exists()


@pytest.mark.parametrize("damage", ["segment state", "write-ahead log", "payload pages"])
def test_a_damaged_shard_names_its_folder_and_a_full_import_repairs_it(env: Path, capsys, damage: str) -> None:
    assert main(["ingest"]) == 0
    shard = env / "qdrant" / "t_chunks"
    segment = next((shard / "segments").iterdir())
    target = {"segment state": segment / "segment.json", "write-ahead log": shard / "wal" / "open-1",
              "payload pages": segment / "payload_storage" / "page_0.dat"}[damage]
    target.write_bytes(os.urandom(64))
    capsys.readouterr()
    assert main(["query", "Qdrant"]) == 2             # a message, not a traceback
    err = " ".join(capsys.readouterr().err.split())
    assert f"{shard}: the chunks collection is damaged" in err and "mindnet ingest --full" in err
    assert "Traceback" not in err
    assert main(["ingest", "--full"]) == 0
    assert main(["check"]) == 0 and "index OK" in capsys.readouterr().out


def test_the_index_folder_and_its_files_are_private(env: Path) -> None:
    assert main(["ingest"]) == 0
    folder = env / "qdrant"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("mindnet.json", "mindnet.lock", "t.graph.npz"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name


def test_a_query_without_an_index_in_a_fresh_folder_says_where_it_looked(tmp_path: Path, fake_ollama) -> None:
    settings = fake_settings(tmp_path, fake_ollama.url)
    app = Mindnet(settings)
    try:
        with pytest.raises(EmptyIndexError, match=f"the index at {settings.qdrant_path}"):
            app.query(QueryRequest(query="x"))
    finally:
        app.close()


def test_past_the_exact_size_the_engine_builds_its_search_index_and_searches_use_it(tmp_path: Path, fake_ollama,
                                                                                   monkeypatch) -> None:
    from mindnet.store.edge import EdgeStore
    from mindnet.store.engine import SearchParams
    retriever_yaml = tmp_path / "retriever.yaml"
    retriever_yaml.write_text("dense:\n  exact_below: 50\n  hnsw_ef: 64\n", encoding="utf-8")
    copy_sample_vault(tmp_path / "vault")
    built, searched = [], []
    monkeypatch.setattr(EdgeStore, "optimize", lambda self, hnsw=True: built.append((self.count("chunks"), hnsw)))
    real = EdgeStore.search_dense

    def search(self, vector, limit, where=None, **kwargs):
        searched.append((where, kwargs.get("params")))
        return real(self, vector, limit, where, **kwargs)
    monkeypatch.setattr(EdgeStore, "search_dense", search)
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, retriever_config=retriever_yaml))
    try:
        assert app.ingest().chunks == 88
        assert built == [(88, True)]                           # 88 chunks > 50: the HNSW index is built
        hits = app.query(QueryRequest(query="Qdrant"))["hits"]
        # the query's own search uses the index; searches restricted to a few chunks (to score each of them)
        # scan those exactly
        assert hits and searched[0] == (None, SearchParams(exact=False, hnsw_ef=64))
        assert len(searched) > 1 and all(w is not None and p == SearchParams(exact=True) for w, p in searched[1:])
        app.ingest()
        assert built == [(88, True)]                           # nothing written: nothing to index again
    finally:
        app.close()


def _memory_mapped_indexes(shard_folder: Path) -> dict[str, bool]:
    """Each payload index of the shard: memory-mapped (Memory.Cold) or not."""
    import qdrant_edge as qe
    shard = qe.EdgeShard.load(str(shard_folder), None)
    try:
        return {name: info.params is not None and info.params.memory == qe.Memory.Cold
                for name, info in shard.info().payload_schema.items()}
    finally:
        shard.close()


def test_below_the_exact_size_an_import_that_wrote_settles_the_chunks_memory_mapped_without_hnsw(
        tmp_path: Path, fake_ollama, monkeypatch) -> None:
    from mindnet.store.edge import EdgeStore
    copy_sample_vault(tmp_path / "vault")
    settled = []
    real = EdgeStore.optimize

    def optimize(self, *, hnsw=True):
        settled.append(hnsw)
        return real(self, hnsw=hnsw)
    monkeypatch.setattr(EdgeStore, "optimize", optimize)
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    try:
        assert app.ingest().chunks == 88
        assert settled == [False]                 # 88 chunks <= exact_below: exact search, no graph to build
        app.ingest()
        assert settled == [False]                 # nothing written: nothing to rewrite
        note = next((tmp_path / "vault").rglob("*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "\nEin neuer Satz.\n", encoding="utf-8")
        app.ingest()
        assert settled == [False, False]
    finally:
        app.close()
    # the chunks' keyword indexes are made memory-mapped (read from disk when a search needs them, not at open)
    assert _memory_mapped_indexes(tmp_path / "qdrant" / "t_chunks") == dict.fromkeys(CHUNK_INDEXES, True)


def test_a_process_that_answers_searches_leaves_the_chunks_as_written_unless_hnsw_is_needed(
        tmp_path: Path, fake_ollama, monkeypatch) -> None:
    """The rewrite closes the chunks shard for its whole length (25-90 s at 5,000-30,000 notes): a server's
    searches would wait for it, so a serving process never starts one; past `exact_below` HNSW is still built."""
    from mindnet.api import create_app
    from mindnet.store.edge import EdgeStore
    copy_sample_vault(tmp_path / "vault")
    settled = []
    monkeypatch.setattr(EdgeStore, "optimize", lambda self, hnsw=True: settled.append(hnsw))
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    create_app(app)                               # what `mindnet serve` serves: searches beside its imports
    try:
        assert app.serving and app.ingest().chunks == 88
        assert settled == []
    finally:
        app.close()
    retriever_yaml = tmp_path / "retriever.yaml"
    retriever_yaml.write_text("dense:\n  exact_below: 50\n", encoding="utf-8")
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url, retriever_config=retriever_yaml))
    app.serving = True
    try:
        note = next((tmp_path / "vault").rglob("*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "\nEin neuer Satz.\n", encoding="utf-8")
        app.ingest()
        assert settled == [True]                  # 88 chunks > 50: searches need the HNSW graph
    finally:
        app.close()


def test_an_index_made_before_is_converted_without_embedding_again_and_answers_the_same(
        tmp_path: Path, fake_ollama) -> None:
    import qdrant_edge as qe
    from helpers_vault import SAMPLE_QUERIES

    from mindnet.store.folder import FolderMeta
    copy_sample_vault(tmp_path / "vault")
    settings = fake_settings(tmp_path, fake_ollama.url)
    app = Mindnet(settings)
    app.ingest()
    app.close()
    # the chunks shard as mindnet before this layout left it: keyword indexes in RAM, no layout in the meta
    shard = qe.EdgeShard.load(str(tmp_path / "qdrant" / "t_chunks"), None)
    for name in list(shard.info().payload_schema):
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
    shard.flush()
    shard.close()
    FolderMeta(tmp_path / "qdrant").update("t", chunks_layout=None)
    assert _memory_mapped_indexes(tmp_path / "qdrant" / "t_chunks") == dict.fromkeys(CHUNK_INDEXES, False)

    def answers(app: Mindnet) -> list:
        return [[(h["node_id"], h["score"]) for h in app.query(QueryRequest(**q))["hits"]] for q in SAMPLE_QUERIES]
    app = Mindnet(settings)
    try:
        before = answers(app)
        embedded = fake_ollama.count("/api/embed")
        with app.index_lock:
            app.store.optimize(hnsw=False)         # what the end of an import that wrote runs
        assert answers(app) == before
        assert fake_ollama.count("/api/embed") - embedded == len(SAMPLE_QUERIES)     # the queries only
    finally:
        app.close()
    assert _memory_mapped_indexes(tmp_path / "qdrant" / "t_chunks") == dict.fromkeys(CHUNK_INDEXES, True)
    assert FolderMeta(tmp_path / "qdrant").get("t")["chunks_layout"] == "cold"


def test_a_rewrite_after_many_chunks_written_runs_in_a_child_process_and_the_index_answers_after_it(
        tmp_path: Path, fake_ollama, monkeypatch) -> None:
    import mindnet.store.edge as edge
    copy_sample_vault(tmp_path / "vault")
    aside = []
    real = edge.settle_aside

    def settle_aside(path, *args, **kwargs):
        aside.append(Path(path).name)
        return real(path, *args, **kwargs)
    monkeypatch.setattr(edge, "settle_aside", settle_aside)
    monkeypatch.setattr(edge, "ASIDE_FROM", 50)          # the sample vault's 88 chunks count as many
    app = Mindnet(fake_settings(tmp_path, fake_ollama.url))
    try:
        assert app.ingest().chunks == 88
        assert aside == ["t_chunks"]
        assert app.query(QueryRequest(query="Qdrant"))["hits"]
        app.ingest()
        assert aside == ["t_chunks"]                     # nothing written: nothing to rewrite
    finally:
        app.close()


def _edge_indexes(tmp_path: Path) -> set[str]:
    return set(_memory_mapped_indexes(tmp_path / "qdrant" / "t_edges"))


def test_an_edges_shard_indexes_what_mindnet_filters_and_counts_by_and_an_older_one_gets_that_set(
        tmp_path: Path, fake_ollama) -> None:
    """`kinds` and `scope` are not indexed on Qdrant Edge (nothing filters or counts by them; they cost the import
    a sixth of its edge writing); a shard an older mindnet made with them, and without the check's
    `target_chunk`, gets today's set at its next import that writes, and `check` finds it sound."""
    import qdrant_edge as qe

    from mindnet.indexing.integrity import check_index
    from mindnet.store.collections import PAYLOAD_INDEXES, SHARD_INDEXES
    vault = copy_sample_vault(tmp_path / "vault")
    settings = fake_settings(tmp_path, fake_ollama.url)
    app = Mindnet(settings)
    app.ingest()
    app.close()
    today = _edge_indexes(tmp_path)
    assert today == set(SHARD_INDEXES["edges"])
    assert {"note_id", "source_id", "target_id", "target_chunk", "resolved", "kind"} <= today
    assert {"kinds", "scope"} <= set(PAYLOAD_INDEXES["edges"]) and not {"kinds", "scope"} & today   # server: kept
    shard = qe.EdgeShard.load(str(tmp_path / "qdrant" / "t_edges"), None)
    for name in ("kinds", "scope"):
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
    shard.update(qe.UpdateOperation.delete_field_index("target_chunk"))
    shard.flush()
    shard.close()
    assert _edge_indexes(tmp_path) == (today | {"kinds", "scope"}) - {"target_chunk"}
    app = Mindnet(settings)
    try:
        app.ingest()                        # nothing changed: nothing written, the shard left as it is
        assert "kinds" in app.store._shard("edges").info().payload_schema
        note = next(vault.rglob("*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        report = app.ingest()
        assert report.changed == 1
        integrity = check_index(app.store)
        assert not integrity.broken, integrity.as_dict()
        assert integrity.edges == app.store.count("edges") > 0
    finally:
        app.close()
    assert _edge_indexes(tmp_path) == today
