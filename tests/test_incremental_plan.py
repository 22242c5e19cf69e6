"""Re-imports plan only what changed (files whose stat changed, and the notes whose links or mentions they
affect), and the index they leave is exactly the one a whole-vault import gives."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_store import payloads
from helpers_vault import fake_settings, write_types, write_vault
from test_import_pipeline import WriteSpy

from mindnet.errors import StoreLockedError
from mindnet.indexing.integrity import check_index
from mindnet.indexing.report import ImportReport
from mindnet.service import Mindnet

OLD = 1_700_000_000   # files get mtimes in the past, so the import trusts an unchanged stat (not "racy")

BASE = {
    "concepts/apfel.md": "---\nid: apfel\naliases: [Malus]\n---\n# Apfel\n\nDer Apfel wächst am Baum. [[Birne]]\n",
    "concepts/birne.md": "# Birne\n\nEine Birne ist kein Apfel. Links: [[Quitte]] und [[concepts/apfel]].\n",
    "concepts/kirsche.md": "# Kirsche\n\nKirschen mag die Amsel. Siehe [[Malus]] und [[Pflaume]].\n",
    "projects/garten.md": "---\ntype: project\n---\n# Garten\n\n## Plan\n\nApfel, Birne und Quitte pflanzen."
                          " [[Kirsche]]\n\n## Stand\n\nDie Amsel frisst Kirschen.\n",
    "journal/2024-05-01.md": "# Tagebuch\n\nHeute im Garten: Birne geschnitten, an Pflaume gedacht.\n",
}


def _stamp(vault: Path, step: int) -> None:
    """The files written since the last stamp get an mtime in the past, distinct per step (so an edit always
    changes the stat, and the import may trust an unchanged one)."""
    for path in vault.rglob("*.md"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mtime > OLD + 10**6:
            os.utime(path, ns=(path.stat().st_atime_ns, (OLD + step) * 1_000_000_000 + hash(path.name) % 1000))


def _stored(app) -> dict:
    return {"notes": sorted((n["note_id"], n["path"], n["title"], n["fingerprint"], n["edges_hash"])
                            for n in payloads(app.store, "notes", None)),
            "chunks": sorted(c["chunk_id"] for c in payloads(app.store, "chunks", ["chunk_id"])),
            "edges": sorted(json.dumps(e, sort_keys=True) for e in payloads(app.store, "edges", None))}


def _summary(report: ImportReport) -> dict:
    data = report.as_dict()
    keys = ("notes", "chunks", "edges_by_kind", "unresolved_count", "mention_edges")
    return {k: data[k] for k in keys} | {"skipped": sorted(data["skipped"])}


class Reference:
    """The same vault imported with a whole-vault plan every time, into its own index."""

    def __init__(self, tmp: Path, url: str, **overrides: object) -> None:
        self.app = Mindnet(fake_settings(tmp / "ref", url, vault_root=tmp / "vault", **overrides))

    def ingest(self) -> ImportReport:
        self.app.settings.cache_dir.joinpath("manifest-t.json").unlink(missing_ok=True)
        self.app.importer._state = None
        report = self.app.ingest()
        assert report.planned == "vault"
        return report


@pytest.fixture
def reference(tmp_path, fake_ollama):
    ref = Reference(tmp_path, fake_ollama.url)
    yield ref
    ref.app.close()


def _assert_same_as_full(app, report: ImportReport, reference: Reference) -> None:
    want = reference.ingest()
    assert _stored(app) == _stored(reference.app)
    assert _summary(report) == _summary(want)
    assert not check_index(app.store).broken


def _edit(vault: Path, rel: str, text: str | None) -> None:
    path = vault / rel
    if text is None:
        path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


STEPS = [
    ("a note appears that an unresolved link named", {"concepts/quitte.md": "# Quitte\n\nQuitten sind hart.\n"}),
    ("a title changes", {"concepts/kirsche.md": "---\ntitle: Sauerkirsche\n---\nKirschen mag die Amsel. "
                                                "Siehe [[Malus]] und [[Pflaume]].\n"}),
    ("a note another links to by title goes", {"concepts/quitte.md": None}),
    ("a note moves, keeping its id", {"concepts/apfel.md": None,
                                      "archiv/apfel-alt.md": BASE["concepts/apfel.md"]}),
    ("an alias appears", {"concepts/birne.md": "---\naliases: [Pflaume]\n---\n# Birne\n\nEine Birne ist kein "
                                               "Apfel. Links: [[Quitte]] und [[concepts/apfel]].\n"}),
    ("a note is mentioned by its new title", {"concepts/amsel.md": "# Amsel\n\nEin Vogel.\n"}),
    ("a copy claims an indexed note's id", {"copy/apfel.md": BASE["concepts/apfel.md"]}),
    ("a note cannot be read any more", {"journal/2024-05-01.md": b"# Tagebuch\n\n\xff\xfe kaputt\n"}),
    ("it can be read again", {"journal/2024-05-01.md": "# Tagebuch\n\nWieder lesbar, Amsel und Quitte.\n"}),
    ("the copy goes", {"copy/apfel.md": None}),
]


def test_each_edit_plans_only_changes_and_leaves_the_index_a_full_import_gives(tmp_path, make_app, reference):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    first = make_app().ingest()
    reference.ingest()
    assert first.planned == "vault"
    for step, (what, files) in enumerate(STEPS, start=1):
        for rel, text in files.items():
            if isinstance(text, bytes):
                (vault / rel).write_bytes(text)
            else:
                _edit(vault, rel, text)
        _stamp(vault, step)
        app = make_app()                      # a new process: the state comes from the manifest
        report = app.ingest()
        assert report.planned == "changes", what
        _assert_same_as_full(app, report, reference)


def test_the_same_app_keeps_its_state_in_memory_between_imports(tmp_path, make_app, reference):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    app = make_app()
    app.ingest()
    (tmp_path / "cache" / "manifest-t.json").unlink()     # not read again: the state is in memory
    _edit(vault, "concepts/quitte.md", "# Quitte\n\nQuitten sind hart.\n")
    _stamp(vault, 1)
    report = app.ingest()
    assert (report.planned, report.new, report.edges_rewritten, report.neighbours) == ("changes", 1, 2, 2)
    _assert_same_as_full(app, report, reference)


def test_only_the_changed_file_is_read(tmp_path, make_app, monkeypatch):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    make_app().ingest()
    _edit(vault, "journal/2024-05-01.md", "# Tagebuch\n\nHeute nichts.\n")
    _stamp(vault, 1)
    app = make_app()
    read: list[str] = []
    import mindnet.indexing.planning as planning
    original = planning.load_note
    monkeypatch.setattr(planning, "load_note", lambda root, path, types: (read.append(path.name),
                                                                         original(root, path, types))[1])
    report = app.ingest()
    assert (read, report.changed, report.unchanged) == (["2024-05-01.md"], 1, 4)


def test_an_unchanged_reimport_writes_nothing_and_reads_no_file(tmp_path, make_app, monkeypatch):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    make_app().ingest()
    app = make_app()
    spy = WriteSpy(app.store, monkeypatch)
    import mindnet.indexing.planning as planning
    monkeypatch.setattr(planning, "load_note", lambda *a: pytest.fail("a file was read"))
    report = app.ingest()
    assert (report.planned, report.unchanged, spy.calls) == ("changes", 5, [])


def test_an_unchanged_reimport_links_nothing_and_reports_what_the_first_import_reported(
        tmp_path, make_app, monkeypatch):
    vault = write_vault(tmp_path / "vault", {**BASE, "broken.md": "---\ntitle: [unclosed\n---\nsee [[Nowhere]]\n"})
    _stamp(vault, 0)
    first = make_app().ingest()
    import mindnet.indexing.planning as planning
    monkeypatch.setattr(planning, "LinkResolver", lambda *a, **k: pytest.fail("links were resolved again"))
    monkeypatch.setattr(planning, "MentionIndex", lambda *a, **k: pytest.fail("mentions were found again"))
    again = make_app().ingest()
    assert (again.planned, again.changed, again.neighbours) == ("changes", 0, 0)
    assert sorted(map(str, again.issues)) == sorted(map(str, first.issues))
    assert any("broken.md" in str(i) for i in again.issues)
    assert again.unresolved == first.unresolved and any("Nowhere" in str(u) for u in again.unresolved)


@pytest.mark.parametrize("spoil", ["token", "manifest", "config"])
def test_a_manifest_that_does_not_match_the_index_is_not_trusted(tmp_path, make_app, spoil):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    make_app().ingest()
    manifest = tmp_path / "cache" / "manifest-t.json"
    app = make_app()
    if spoil == "token":      # e.g. another import wrote the index and died before storing its token
        app.store.write_token("other")
    elif spoil == "manifest":
        manifest.write_text("{not json", encoding="utf-8")
    else:
        data = json.loads(manifest.read_text())
        data["config_key"] = "another types config"
        manifest.write_text(json.dumps(data), encoding="utf-8")
    report = app.ingest()
    assert report.planned == "vault"
    assert make_app().ingest().planned == "changes"      # the whole-vault run wrote a manifest that matches


def test_a_run_that_fails_half_way_leaves_the_next_run_planning_the_whole_vault(tmp_path, make_app, monkeypatch,
                                                                                 reference):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    app = make_app()
    app.ingest()
    _edit(vault, "concepts/quitte.md", "# Quitte\n\nQuitten sind hart.\n")
    _stamp(vault, 1)

    def boom(*args, **kwargs):
        raise RuntimeError("disk gone")
    monkeypatch.setattr(app.importer, "_write_changed", boom)
    with pytest.raises(RuntimeError):
        app.ingest()
    monkeypatch.undo()
    app = make_app()
    report = app.ingest()
    assert (report.planned, report.new) == ("vault", 1)
    _assert_same_as_full(app, report, reference)


def test_a_run_stopped_early_derives_the_affected_edges_again(tmp_path, make_app, reference):
    """A note written by a stopped run's relink points at a note the run did not write; that note goes before
    the next run: the edge must not stay resolved to it."""
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    app = make_app()
    app.ingest()
    many = {f"bulk/n{i:03d}.md": f"# N{i}\n\ntext {i}\n" for i in range(70)}    # two batches of notes
    write_vault(vault, {**many, "zz/quitte.md": "# Quitte\n\nQuitten.\n"})
    _stamp(vault, 1)
    calls = []
    report = app.ingest(should_stop=lambda: bool(calls.append(1)) or True)   # stop after the first batch
    assert report.stopped_early
    _edit(vault, "zz/quitte.md", None)
    _stamp(vault, 2)
    report = app.ingest()
    assert report.planned == "changes"
    _assert_same_as_full(app, report, reference)


def test_random_edits_match_a_full_import(tmp_path, make_app, reference):
    rng = random.Random(11)
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    app = make_app()
    app.ingest()
    titles = ["Apfel", "Birne", "Quitte", "Pflaume", "Amsel", "Kirsche", "Garten", "Malus", "Mispel"]
    for step in range(1, 13):
        files = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
        action = rng.choice(["new", "edit", "delete", "move", "retitle"])
        title = rng.choice(titles)
        body = " ".join(rng.choice([f"[[{rng.choice(titles)}]]", rng.choice(titles), "und", "der"])
                        for _ in range(12))
        if action == "new" or len(files) < 3:
            _edit(vault, f"n/{step}.md", f"# {title}\n\n{body}\n")
        elif action == "edit":
            _edit(vault, rng.choice(files), f"# {title}\n\n{body}\n")
        elif action == "delete":
            _edit(vault, rng.choice(files), None)
        elif action == "move":
            src = rng.choice(files)
            (vault / "moved").mkdir(exist_ok=True)
            shutil.move(vault / src, vault / "moved" / f"{step}-{Path(src).name}")
        else:
            _edit(vault, rng.choice(files), f"---\ntitle: {title}\naliases: [{rng.choice(titles)}]\n---\n{body}\n")
        _stamp(vault, step)
        if step % 2 == 0:
            app = make_app()          # every other step from the manifest, the others from memory
        report = app.ingest()
        assert report.planned == "changes", (step, action)
        _assert_same_as_full(app, report, reference)


def test_an_unchanged_reimport_does_not_open_the_index(tmp_path, make_app):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    before = make_app().ingest()
    app = make_app()
    report = app.ingest()
    assert (app.importer.store_open, app.opened) == (False, False)
    assert (report.notes, report.unchanged, report.chunks, report.edges, report.vectors_missing) == \
        (before.notes, 5, before.chunks, before.edges, 0)
    _edit(vault, "concepts/quitte.md", "# Quitte\n\nQuitten sind hart.\n")      # a change opens it
    _stamp(vault, 1)
    app = make_app()
    assert (app.ingest().new, app.importer.store_open) == (1, True)


def test_chunks_without_vectors_make_the_next_import_open_the_index_and_embed_them(tmp_path, make_app):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    make_app().ingest(embed=False)             # phase 1 only, as after a kill in phase 2
    app = make_app()
    report = app.ingest()
    assert (report.embedded_texts > 0, report.vectors_missing, app.importer.store_open) == (True, 0, True)
    app = make_app()
    report = app.ingest()                      # now complete: nothing to open
    assert (report.embedded_texts, app.importer.store_open) == (0, False)


def test_an_unchanged_reimport_still_refuses_a_folder_another_process_holds(tmp_path, make_app):
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    first = make_app()
    first.ingest()
    first.close()
    holder = subprocess.Popen([sys.executable, "-c", "import sys,time\nfrom mindnet.store.factory import open_folder\n"
                               f"s=open_folder({str(tmp_path / 'qdrant')!r}, 't')\nprint('open', flush=True)\n"
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreLockedError):
            make_app().ingest()
    finally:
        holder.kill()
        holder.wait()


def test_common_names_and_the_mention_cap_follow_edits_as_a_full_import(tmp_path, make_app, fake_ollama):
    """With a tiny vault made to have common names (named by more than a third of the notes) and a cap of one
    mention per note, an edit that makes a name common, or changes which mention a note keeps, re-derives the
    notes it affects."""
    types = write_types(tmp_path / "types.yaml", **{"mentions.common_min_notes": 1, "mentions.max_note_share": 0.34,
                                                     "mentions.max_per_note": 1, "mentions.common_damping": 0.0})
    vault = write_vault(tmp_path / "vault", BASE)
    _stamp(vault, 0)
    reference = Reference(tmp_path, fake_ollama.url, types_config=types)
    try:
        app = make_app(types_config=types)
        app.ingest()
        rng = random.Random(5)
        words = ["Apfel", "Birne", "Quitte", "Kirsche", "Garten", "Amsel", "Tagebuch", "Malus"]
        for step in range(1, 9):
            files = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
            body = " ".join(rng.choice(words + ["und", "der", "die"]) for _ in range(14))
            if step % 3 == 0:
                _edit(vault, rng.choice(files), None)
            else:
                _edit(vault, f"n/{step}.md" if step % 2 else rng.choice(files), f"# {rng.choice(words)}\n\n{body}\n")
            _stamp(vault, step)
            if step % 2 == 0:
                app = make_app(types_config=types)
            report = app.ingest()
            assert report.planned == "changes", step
            _assert_same_as_full(app, report, reference)
    finally:
        reference.app.close()
