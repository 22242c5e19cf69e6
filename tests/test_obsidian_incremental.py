"""Links read the Obsidian way stay right across re-imports: a re-import that plans only what changed leaves the
index a whole-vault import gives when a linked heading moves or goes, a file of a shared name appears next to the
linking note, a missing note appears at a relative path, a note a relative link named goes, or an empty note
appears (issue 22)."""

from __future__ import annotations

import pytest
from helpers_store import payloads
from test_incremental_plan import Reference, _assert_same_as_full, _edit, _stamp

FILLER = " ".join(f"wort{i}" for i in range(260))      # past a medium chunk: what follows opens the next chunk

BASE = {
    "a/index.md": "# Index\n\nSee [[./Note]] and [[../b/Note]], [deep](Sub/Deep.md#Setup), [[Shared]],\n"
                  "[[Target#Setup]], [[Blocks#^blk]] and [the missing one](Missing%20One.md).\n",
    "a/Note.md": "# A note\n\nin folder a\n",
    "b/Note.md": "# B note\n\nin folder b\n",
    "a/Sub/Deep.md": "# Deep\n\n## Setup\n\ninstall it\n",
    "Target.md": "# Target\n\nIntro.\n\n## Setup\n\nSteps.\n",
    "Blocks.md": "# Blocks\n\n| a | b |\n|---|---|\n\n^blk\n",
    "c/Shared.md": "# Shared in c\n\nc\n",
}

STEPS = [
    ("the linked heading and block move to another chunk", {
        "Target.md": f"# Target\n\n{FILLER}\n\n## Setup\n\nSteps.\n",
        "Blocks.md": f"# Blocks\n\n{FILLER}\n\nA paragraph. ^blk\n"}),
    ("the linked heading goes", {"Target.md": f"# Target\n\n{FILLER}\n\n## Other\n\nSteps.\n"}),
    ("a file of the shared name appears in the linking note's folder", {"a/Shared.md": "# Shared in a\n\na\n"}),
    ("the missing note appears", {"a/Missing One.md": "# Missing One\n\nhere now\n"}),
    ("the note a relative link named goes", {"a/Note.md": None}),
    ("an empty note appears and a link names it", {"Empty.md": "",
                                                   "c/Shared.md": "# Shared in c\n\nc and [[empty]]\n"}),
]


@pytest.fixture
def reference(tmp_path, fake_ollama):
    ref = Reference(tmp_path, fake_ollama.url)
    yield ref
    ref.app.close()


def _targets(app) -> dict[str, str]:
    """The index's reference edges from a/index.md: the link as written -> its target."""
    notes = {n["note_id"]: n["path"] for n in payloads(app.store, "notes", ["note_id", "path"])}
    out = {}
    for e in payloads(app.store, "edges"):
        if e["kind"] == "references" and notes.get(e["note_id"]) == "a/index.md":
            chunk = (e.get("target_chunk") or "").rpartition("#c")[2]
            shown = notes.get(e["target_id"], e["target_id"]) + (f"#c{chunk}" if chunk else "")
            out[e["target_text"] + (f"#{e['anchor']}" if e.get("anchor") else "")] = shown
    return out


def test_each_edit_plans_only_changes_and_leaves_the_index_a_full_import_gives(tmp_path, make_app, reference):
    vault = tmp_path / "vault"
    for rel, text in BASE.items():
        _edit(vault, rel, text)
    _stamp(vault, 0)
    assert make_app().ingest().planned == "vault"
    reference.ingest()
    seen = [_targets(make_app())]
    for step, (what, files) in enumerate(STEPS, start=1):
        for rel, text in files.items():
            _edit(vault, rel, text)
        _stamp(vault, step)
        app = make_app()
        report = app.ingest()
        assert report.planned == "changes", what
        _assert_same_as_full(app, report, reference)
        seen.append(_targets(app))
    first, moved, gone, shared, healed, relative_gone, _ = seen
    assert first == {"./Note": "a/Note.md", "../b/Note": "b/Note.md", "Sub/Deep.md#Setup": "a/Sub/Deep.md#c01",
                     "Shared": "c/Shared.md", "Target#Setup": "Target.md#c01", "Blocks#^blk": "Blocks.md#c01",
                     "Missing One.md": "missing one"}
    assert (moved["Target#Setup"], moved["Blocks#^blk"]) == ("Target.md#c02", "Blocks.md#c02")
    assert (gone["Target#Setup"], gone["Blocks#^blk"]) == ("Target.md", "Blocks.md#c02")
    assert shared["Shared"] == "a/Shared.md"            # the one in the linking note's folder
    assert healed["Missing One.md"] == "a/Missing One.md"
    assert relative_gone["./Note"] == "a/note"           # unresolved: never the other folder's Note
