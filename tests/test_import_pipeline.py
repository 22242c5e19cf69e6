"""The import through the real pipeline into the embedded index (Qdrant Edge), with the fake Ollama's embeddings."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_ollama import FakeOllama
from helpers_store import payloads
from helpers_vault import copy_sample_vault, fake_settings, write_types, write_vault
from llama_index.core import VectorStoreIndex
from llama_index.embeddings.ollama import OllamaEmbedding

from mindnet.errors import DimensionMismatchError, EmbeddingError, StoreLockedError, VaultError, VaultMismatchError
from mindnet.indexing.integrity import check_index
from mindnet.retrieval.vector_store import chunk_vector_store
from mindnet.service import Mindnet
from mindnet.store.engine import KINDS
from mindnet.store.factory import open_folder
from mindnet.vault.note import path_note_id

EMBED = "/api/embed"


def stored(app, kind: str, field: str) -> list:
    return sorted(p[field] for p in payloads(app.store, kind, [field]))


def stored_chunk_texts(app) -> dict[str, str]:
    return {p["chunk_id"]: p["text"] for p in payloads(app.store, "chunks", ["chunk_id", "text"])}


class WriteSpy:
    """Counts the write calls an app's store receives."""

    METHODS = ("create", "drop", "upsert", "set_dense", "delete", "delete_where", "write_token")

    def __init__(self, store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in self.METHODS:
            original = getattr(store, name)
            monkeypatch.setattr(store, name, self._wrap(name, original))

    def _wrap(self, name, original):
        def call(*args, **kwargs):
            self.calls.append(name)
            return original(*args, **kwargs)

        return call


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return copy_sample_vault(tmp_path / "vault")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The sample vault (plus hidden and template files) imported once: (app, report, fake Ollama)."""
    tmp = tmp_path_factory.mktemp("imported")
    vault = copy_sample_vault(tmp / "vault")
    write_vault(
        vault, {".obsidian/x.md": "# Hidden", ".trash/y.md": "# Trash", "templates/z.md": "# Template"}
    )
    with pytest.MonkeyPatch.context() as mp, FakeOllama() as server:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        app = Mindnet(fake_settings(tmp, server.url))
        report = app.ingest()
        yield app, report, server
        app.close()


# ------------------------------------------------------------------ the sample vault


def test_sample_vault_imports_30_notes_88_chunks_and_435_edges(imported) -> None:
    # 435: 434 before names were file names, plus a mention of the file name "graph-expansion" in projects/mindnet
    app, report, _ = imported
    assert (report.notes, report.new, report.chunks, report.edges) == (30, 30, 88, 435)
    assert [len(stored(app, k, "note_id")) for k in ("notes", "chunks", "edges")] == [30, 88, 435]


def test_sample_vault_reports_the_broken_note_the_unknown_type_and_the_unresolved_link(imported) -> None:
    _, report, _ = imported
    assert report.skipped == []
    assert [str(i) for i in report.warnings] == [
        "warning: Linsensuppe.md: unknown type 'recipe' in frontmatter; using 'concept' "
        "(known: concept, decision, "
        "experience, index, person, project, source, task, value; add it to types.yaml or fix the spelling)",
        "warning: broken-frontmatter.md:5: frontmatter is not valid YAML: found unexpected end of stream; the "
        "note was imported without its frontmatter (fix: check quotes and indentation of that line)",
    ]
    assert report.unresolved == [("sources/how-to-take-smart-notes.md", "Zettelkasten Methode")]


def test_sample_vault_ignores_hidden_folders_and_templates(imported) -> None:
    paths = stored(imported[0], "notes", "path")
    assert (len(paths), [p for p in paths if p.startswith((".", "templates/"))]) == (30, [])


def test_import_writes_three_collections_and_a_consistent_graph(imported) -> None:
    app = imported[0]
    assert [k for k in KINDS if app.store.exists(k)] == ["notes", "chunks", "edges"]
    assert sorted(p.name for p in app.store.folder.iterdir() if p.is_dir()) == ["t_chunks", "t_edges", "t_notes"]
    integrity = check_index(app.store)
    assert (integrity.broken, integrity.unresolved) == (
        False,
        [{"note_id": "src-smart-notes", "target": "zettelkasten methode", "kind": "references",
          "text": "Zettelkasten Methode"}],
    )


def test_plain_llamaindex_retriever_reads_the_imported_chunks(imported) -> None:
    app, _, server = imported
    store = chunk_vector_store(app.store)
    embed = OllamaEmbedding(model_name="nomic-embed-text", base_url=server.url)
    index = VectorStoreIndex.from_vector_store(store, embed_model=embed)
    query = stored_chunk_texts(app)["tool-qdrant#c02"]
    hits = index.as_retriever(similarity_top_k=3).retrieve(query)
    assert len(hits) == 3
    assert all(h.node.metadata["chunk_id"].startswith(h.node.metadata["note_id"] + "#c") for h in hits)
    assert (hits[0].node.metadata["chunk_id"], hits[0].node.get_content()) == ("tool-qdrant#c02", query)


# ------------------------------------------------------------------ incremental


def test_unchanged_reimport_makes_no_embedding_call_and_no_write(
    sample, make_app, fake_ollama, monkeypatch
) -> None:
    make_app().ingest()
    app = make_app()
    spy = WriteSpy(app.store, monkeypatch)
    fake_ollama.clear_requests()
    report = app.ingest()
    assert (fake_ollama.count(EMBED), spy.calls, report.unchanged, report.embedding_calls) == (0, [], 30, 0)


def test_unchanged_reimport_works_with_ollama_down(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext", "b.md": "# B\n\ntext"})
    make_app().ingest()
    fake_ollama.stop()
    report = make_app().ingest()
    assert (report.unchanged, report.skipped) == (2, [])


NOTE_V1 = "---\nid: n\n---\n# N\n\n" + "\n\n".join(
    f"## S{i}\n\n" + " ".join(f"old{i}w{j}" for j in range(60)) for i in range(3)
)
NOTE_V2 = "---\nid: n\n---\n# N\n\nnow short, links [[Other]]"


def test_changed_note_replaces_its_chunks_and_edges(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", {"people/n.md": NOTE_V1, "other.md": "# Other\n\ntext"})
    app = make_app()
    app.ingest()
    assert sorted(c for c in stored_chunk_texts(app) if c.startswith("n#")) == ["n#c01", "n#c02", "n#c03"]
    write_vault(tmp_path / "vault", {"people/n.md": NOTE_V2})
    fake_ollama.clear_requests()
    report = make_app().ingest()
    app = make_app()
    assert (report.changed, report.unchanged) == (1, 1)
    assert {c: t for c, t in stored_chunk_texts(app).items() if c.startswith("n#")} == {
        "n#c01": "# N\n\nnow short, links [[Other]]"
    }
    n_edges = sorted(
        (p["kinds"], p["target_id"]) for p in payloads(app.store, "edges") if p["note_id"] == "n"
    )
    other = path_note_id("other.md")
    assert n_edges == [(["belongs_to"], "n"), (["references", "related_to"], other)]   # the default on the link
    assert check_index(app.store).broken is False


def test_deleted_file_loses_note_chunks_and_edges(tmp_path, make_app) -> None:
    write_vault(tmp_path / "vault", {"a.md": "# A\n\nsee [[B]]", "b.md": "# B\n\nsee [[A]]"})
    make_app().ingest()
    (tmp_path / "vault" / "b.md").unlink()
    report = make_app().ingest()
    app = make_app()
    b = path_note_id("b.md")
    assert report.deleted == 1
    assert b not in stored(app, "notes", "note_id") + stored(app, "chunks", "note_id") + stored(
        app, "edges", "note_id"
    )
    assert [
        (p["target_id"], p["resolved"])
        for p in payloads(app.store, "edges")
        if p["kind"] == "references"
    ] == [("b", False)]      # the normalised name of the missing note


@pytest.mark.parametrize(
    ("text", "old_id", "new_id"),
    [
        ("---\nid: keep\n---\n# Title\n\nbody", "keep", "keep"),
        ("# Title\n\nbody", path_note_id("old.md"), path_note_id("moved/new.md")),
    ],
)
def test_renamed_note_is_stored_once_under_its_new_path(tmp_path, make_app, text, old_id, new_id) -> None:
    write_vault(tmp_path / "vault", {"old.md": text})
    make_app().ingest()
    (tmp_path / "vault" / "moved").mkdir()
    (tmp_path / "vault" / "old.md").rename(tmp_path / "vault" / "moved" / "new.md")
    make_app().ingest()
    app = make_app()
    assert (stored(app, "notes", "path"), stored(app, "notes", "note_id")) == (["moved/new.md"], [new_id])
    assert stored(app, "chunks", "path") == ["moved/new.md"]
    assert stored(app, "chunks", "note_id") == [new_id]
    assert check_index(app.store).broken is False


def test_full_rebuilds_every_note(tmp_path, make_app) -> None:
    write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext", "b.md": "# B\n\ntext"})
    make_app().ingest()
    report = make_app().ingest(full=True)
    assert (report.new, report.unchanged, report.chunks) == (2, 0, 2)


def test_unresolved_link_heals_when_a_matching_note_is_added(tmp_path, make_app) -> None:
    write_vault(tmp_path / "vault", {"sources/s.md": "---\nid: s\n---\n# S\n\nsee [[Zettelkasten Methode]]"})
    first = make_app().ingest()
    write_vault(
        tmp_path / "vault", {"concepts/zk.md": "---\nid: zk\naliases: [Zettelkasten Methode]\n---\n# ZK\n\nx"}
    )
    report = make_app().ingest()
    app = make_app()
    healed = [
        (p["target_id"], p["resolved"])
        for p in payloads(app.store, "edges")
        if p.get("target_text") == "Zettelkasten Methode"
    ]
    assert first.unresolved == [("sources/s.md", "Zettelkasten Methode")]
    assert (report.new, report.edges_rewritten, report.unresolved) == (1, 1, [])
    assert healed == [("zk", True)]  # the source type's default edge is `references` itself: no second edge


# ------------------------------------------------------------------ bad embeddings, Ollama down


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("empty", "n.md: backend returned an empty vector (is the model an embedding model?)"),
        ("wrong_dim", "n.md: backend returned a 65-d vector, expected 64-d"),
    ],
)
def test_bad_vector_leaves_the_new_text_searchable_by_keywords_until_it_is_embedded(
    tmp_path, make_app, fake_ollama, mode, message
) -> None:
    write_vault(tmp_path / "vault", {"n.md": "# N\n\nfirst version", "m.md": "# M\n\nstays"})
    app = make_app()
    app.ingest()
    write_vault(tmp_path / "vault", {"n.md": "# N\n\nsecond version"})
    original = fake_ollama.embed_fn
    fake_ollama.embed_fn = lambda text: (
        original(text)
        if text.endswith("dimension probe")
        else ([] if mode == "empty" else [*original(text), 0.0])
    )
    report = app.ingest()
    assert [str(i) for i in report.warnings] == [
        f"warning: n.md: 1 chunk(s) not embedded: {message}; found by keywords and links until an import "
        f"embeds them"
    ]
    assert (report.changed, report.skipped, report.vectors_missing) == (1, [], 1)
    assert sorted(stored_chunk_texts(app).values()) == ["# M\n\nstays", "# N\n\nsecond version"]
    assert check_index(app.store).as_dict()["unembedded"] == 1
    fake_ollama.embed_fn = original
    again = app.ingest()      # nothing changed in the vault: only the missing vector is added
    assert (again.changed, again.embedded_texts, again.vectors_missing) == (0, 1, 0)


def test_dimension_differing_from_the_collection_stops_the_import_until_full(
    tmp_path, make_app, fake_ollama
) -> None:
    write_vault(tmp_path / "vault", {"n.md": "# N\n\nfirst", "m.md": "# M\n\nstays"})
    make_app().ingest()
    fake_ollama.dim = 32
    write_vault(tmp_path / "vault", {"n.md": "# N\n\nsecond"})
    with pytest.raises(DimensionMismatchError) as info:
        make_app().ingest()
    assert str(info.value) == (
        "collection t_chunks holds 64-d vectors but the embedding model gives 32-d; the "
        "embedding model changed: run `mindnet ingest --full` to rebuild the index"
    )
    report = make_app().ingest(full=True)  # the cached 64-d vectors are not reused
    assert (report.new, report.skipped, report.embedded_texts) == (2, [], 2)


def test_ollama_down_midway_leaves_every_note_searchable_and_the_next_run_embeds_the_rest(
    sample, make_app, fake_ollama, monkeypatch
) -> None:
    from mindnet.indexing import vectors
    embed_many = vectors.Embedder.aembed_many
    calls = []

    async def dies_after_the_first_batch(self, texts, **kwargs):
        out = await embed_many(self, texts, **kwargs)
        calls.append(len(out.vectors))
        if len(calls) == 1:          # the first batch (embedded beside phase 1) is the last one answered
            fake_ollama.stop()
        return out

    monkeypatch.setattr(vectors.Embedder, "aembed_many", dies_after_the_first_batch)
    app = make_app(embed_concurrency=1)
    report = app.ingest()
    missing = 88 - calls[0]
    assert (report.new, report.vectors_missing, report.skipped) == (30, missing, [])
    assert report.warnings[-1].message.startswith(f"{missing} chunks are not embedded yet: ")
    assert "embedding backend ollama:nomic-embed-text failed" in report.warnings[-1].message
    assert len(stored(app, "chunks", "chunk_id")) == 88          # phase 1 wrote every note
    fake_ollama.start()
    again = app.ingest()
    assert (again.new, again.unchanged, again.embedded_texts, again.vectors_missing) == (0, 30, missing, 0)
    assert check_index(app.store).broken is False


def test_a_size_probe_that_fails_after_the_embedding_beside_phase_1_answered_takes_that_answer(
    sample, make_app, fake_ollama, monkeypatch
) -> None:
    # the probe and the first batch beside phase 1 race; Ollama going down between them aborted the whole import
    # (loaded CI of stop 39: the batch answered first, the probe met a stopped server)
    import asyncio
    import threading

    from mindnet import backends
    probe, call = backends.Embedder.aprobe_dim, backends.Embedder._call
    probing = threading.Event()

    async def after_the_probe_asked(self, texts, what):
        await asyncio.to_thread(probing.wait, 60)          # the probe asks first, the batch answers first
        return await call(self, texts, what)

    async def down_once_a_batch_answered(self):
        probing.set()
        for _ in range(6000):
            if self.backend_dim is not None:
                break
            await asyncio.sleep(0.01)
        fake_ollama.stop()
        return await probe(self)

    monkeypatch.setattr(backends.Embedder, "_call", after_the_probe_asked)
    monkeypatch.setattr(backends.Embedder, "aprobe_dim", down_once_a_batch_answered)
    app = make_app(embed_concurrency=1)
    report = app.ingest()
    assert probing.is_set()
    assert (report.new, report.skipped) == (30, [])
    assert 0 < report.vectors_missing < 88
    assert len(stored(app, "chunks", "chunk_id")) == 88          # phase 1 wrote every note
    fake_ollama.start()
    assert app.ingest().vectors_missing == 0


def test_profile_change_reembeds_only_windows_that_changed(tmp_path, make_app) -> None:
    body = "\n\n".join(" ".join(f"p{p}w{i}" for i in range(100)) for p in range(4))
    write_vault(tmp_path / "vault", {"people/a.md": f"# A\n\n{body}"})  # person: profile short
    first = make_app().ingest()
    types = write_types(tmp_path / "types.yaml", **{"chunk_profiles.short.overlap_words": 5})
    second = make_app(types_config=types).ingest()
    assert (first.chunks, second.changed, second.chunks) == (4, 1, 4)
    assert (first.embedded_texts, second.embedded_texts) == (4, 3)  # the first window has no overlap


# ------------------------------------------------------------------ the local Qdrant lock


def test_second_process_on_the_same_qdrant_folder_is_told_who_holds_it(tmp_path) -> None:
    folder = tmp_path / "qdrant"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from mindnet.store.factory import open_folder
            store = open_folder({str(folder)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(StoreLockedError) as info:
            open_folder(folder)
        assert f"in use by process {holder.pid} (-c, started " in str(info.value)
        assert "set MINDNET_QDRANT_URL" in str(info.value)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_one_bad_vector_in_a_shared_embedding_call_fails_only_its_note(tmp_path, make_app, fake_ollama) -> None:
    # several notes share one backend call; the bad one must fail alone (the call is split until it stands alone)
    files = {f"n{i}.md": f"# N{i}\n\ntext {i}" for i in range(12)} | {"bad.md": "# Bad\n\npoison"}
    write_vault(tmp_path / "vault", files)
    original = fake_ollama.embed_fn
    fake_ollama.embed_fn = lambda text: [] if "poison" in text else original(text)
    report = make_app().ingest()
    assert (report.new, report.vectors_missing, [i.path for i in report.warnings]) == (13, 1, ["bad.md"])
    assert fake_ollama.count("/api/embed") < 12   # the good notes were embedded in shared calls


# ------------------------------------------------------------------ crash-safety of the index itself


def _sections(n: int) -> str:
    return "# Big\n\n" + "\n\n".join(f"## Part {i}\n\n[[rel:depends_on T{i}]] words of part {i}" for i in range(n))


def test_a_run_dying_before_the_note_record_leaves_nothing_stale_after_the_next_edit(
    tmp_path, make_app, monkeypatch
) -> None:
    from mindnet.indexing import pipeline
    targets = {f"T{i}.md": f"# T{i}\n\ntarget {i}" for i in range(6)}
    write_vault(tmp_path / "vault", {"projects/big.md": _sections(2)} | targets)   # by_heading: a chunk a part
    make_app().ingest()
    write_vault(tmp_path / "vault", {"projects/big.md": _sections(5)})
    original = pipeline.Importer._write_notes

    def die_on_final_record(self, planned, pending=None):
        if pending is None and any(p.note.path == "projects/big.md" for p in planned):
            raise KeyboardInterrupt("killed between chunks and the note record")
        return original(self, planned, pending)

    monkeypatch.setattr(pipeline.Importer, "_write_notes", die_on_final_record)
    with pytest.raises(KeyboardInterrupt):
        make_app().ingest()
    monkeypatch.setattr(pipeline.Importer, "_write_notes", original)
    write_vault(tmp_path / "vault", {"projects/big.md": _sections(1)})
    app = make_app()
    report = app.ingest()
    big = next(p["note_id"] for p in payloads(app.store, "notes", ["note_id", "path"])
               if p["path"] == "projects/big.md")
    assert report.changed == 1
    assert [c for c in stored(app, "chunks", "chunk_id") if c.startswith(big + "#")] == [f"{big}#c01"]
    edges = [e["kind"] for e in payloads(app.store, "edges", ["kind", "note_id"]) if e["note_id"] == big]
    assert sorted(edges) == ["belongs_to", "depends_on"]
    assert check_index(app.store).broken is False


def test_full_rebuild_with_the_backend_down_keeps_the_index(tmp_path, make_app, fake_ollama) -> None:
    write_vault(tmp_path / "vault", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta"})
    make_app().ingest()
    fake_ollama.stop()
    app = make_app()
    with pytest.raises(EmbeddingError):
        app.ingest(full=True)
    assert stored(app, "notes", "path") == ["a.md", "b.md"]


def test_an_empty_vault_does_not_wipe_the_index(tmp_path, make_app) -> None:
    write_vault(tmp_path / "vault", {"a.md": "# A\n\nalpha"})
    make_app().ingest()
    (tmp_path / "empty").mkdir()
    app = make_app()
    with pytest.raises(VaultMismatchError, match="was built from the vault"):     # another (empty) folder
        app.ingest(tmp_path / "empty")
    (tmp_path / "vault" / "a.md").unlink()                                         # the vault itself emptied
    with pytest.raises(VaultError, match="importing would delete them all"):
        app.ingest()
    assert stored(app, "notes", "path") == ["a.md"]
    assert app.ingest(tmp_path / "empty", full=True).notes == 0


def test_check_reports_an_import_stopped_mid_note(tmp_path, make_app, monkeypatch) -> None:
    from mindnet.indexing import pipeline
    write_vault(tmp_path / "vault", {"a.md": "# A\n\nalpha"})
    make_app().ingest()
    write_vault(tmp_path / "vault", {"a.md": "# A\n\nalpha changed"})
    monkeypatch.setattr(pipeline.Importer, "_write_edges", lambda self, items: (_ for _ in ()).throw(KeyboardInterrupt))
    app = make_app()
    with pytest.raises(KeyboardInterrupt):
        app.ingest()
    report = check_index(app.store)
    assert (report.broken, len(report.unfinished_notes)) == (True, 1)
    monkeypatch.undo()
    make_app().ingest()
    assert check_index(make_app().store).broken is False


def test_searches_during_a_full_rebuild_get_the_whole_index_or_a_refusal(sample, make_app) -> None:
    """Never half an index: a search beside a rebuild is answered from a complete one, or refused at once
    (IndexRebuildingError, a 503 over HTTP: tests/test_rebuild_searches.py)."""
    import threading

    from mindnet.errors import IndexRebuildingError
    from mindnet.retrieval.query import QueryRequest
    app = make_app()
    app.ingest()
    errors: list[BaseException] = []
    hits: list[int] = []
    refused: list[str] = []

    def search_repeatedly() -> None:
        for _ in range(15):
            try:
                hits.append(len(app.retriever.search(QueryRequest(query="Qdrant Entscheidung", top_k=3)).nodes))
            except IndexRebuildingError as exc:
                refused.append(str(exc))
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    searchers = [threading.Thread(target=search_repeatedly) for _ in range(3)]
    rebuild = threading.Thread(target=lambda: app.ingest(full=True))
    for t in [*searchers[:2], rebuild, searchers[2]]:
        t.start()
    for t in [*searchers, rebuild]:
        t.join()
    assert errors == []
    assert hits == [3] * len(hits) and len(hits) + len(refused) == 45
    assert all("full rebuild of the index is running" in r for r in refused)


def test_a_copied_note_with_the_same_id_does_not_push_the_indexed_one_out(tmp_path, make_app) -> None:
    write_vault(tmp_path / "vault", {"zzz/victim.md": "---\nid: victim-1\n---\n# Victim\n\npurple elephants"})
    make_app().ingest()
    write_vault(tmp_path / "vault", {"aaa/copy.md": "---\nid: victim-1\n---\n# Copy\n\nsomething else"})
    app = make_app()
    report = app.ingest()
    assert [(i.path, "already used by zzz/victim.md" in i.message) for i in report.skipped] == [("aaa/copy.md", True)]
    assert stored(app, "notes", "path") == ["zzz/victim.md"]
