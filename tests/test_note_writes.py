"""Writes into the vault keep the user's text (issue 27, item 2): `suggest --apply` beside an editor that keeps
saving, a failed write (a real EFBIG from a file-size limit) that leaves nothing behind, and the backups.

The editor is a real second process saving the note as fast as it can, by atomic rename (most editors' "safe
write") or in place (Obsidian, VS Code); each save appends one line "edit K". Whatever `write_plan` does meanwhile,
every line the editor wrote must end up in the note or in a backup: nothing is lost without a trace.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mindnet.analysis.apply import BACKUP_DIR, plan_edges, undo_plan, write_plan
from mindnet.analysis.models import LinkSuggestion, Relation
from mindnet.errors import NoteChangedError, VaultError

NOTE = "projects/suche.md"
ORIGINAL = "---\nid: suche\n---\n# Suche\n\nDie Suche hängt ab von Qdrant.\n"
ROUNDS = 60               # write_plan calls while the editor saves
EDITOR_SAVES = 200_000    # upper bound of the editor's saves (it stops when told, long before)
BOUND_S = 120             # no step of this test may take longer (a hang is a failure, not a wait)

EDITOR = r"""
import os, sys
path, mode, stop, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
k = 0
while k < limit and not os.path.exists(stop):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    k += 1
    new = text + f"edit {k}\n"
    if mode == "atomic":
        tmp = os.path.join(os.path.dirname(path), ".editor-save.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(new)
        os.replace(tmp, path)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
print(k)
"""


def link(title: str) -> LinkSuggestion:
    return LinkSuggestion(note_id=title, title=title, path=f"{title}.md", type="concept", link_text=title,
                          confidence=0.5, reason="r", sources=["related"],
                          relation=Relation(kind="related_to", confidence=0.5, reason="r", rule="fallback"),
                          callout="")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "projects").mkdir(parents=True)
    (root / NOTE).write_text(ORIGINAL, encoding="utf-8")
    return root


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND_S} s: {what}")
        time.sleep(0.01)


def kept_lines(vault: Path) -> set[str]:
    """Every line of the note and of all its backups."""
    texts = [(vault / NOTE).read_text(encoding="utf-8")]
    texts += [b.read_text(encoding="utf-8") for b in (vault / BACKUP_DIR).rglob("*") if b.is_file()]
    return {line for text in texts for line in text.splitlines()}


@pytest.mark.parametrize("mode", ["atomic", "in_place"])
def test_apply_beside_a_saving_editor_loses_no_save(vault: Path, tmp_path: Path, mode: str) -> None:
    note = vault / NOTE
    stop = tmp_path / "stop-editor"
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(note), mode, str(stop), str(EDITOR_SAVES)],
                              stdout=subprocess.PIPE, text=True)
    applied = refused = 0
    try:
        wait_for(lambda: "edit 1" in note.read_text(encoding="utf-8"), "the editor's first save")
        for n in range(ROUNDS):
            plan = plan_edges(vault, NOTE, [link(f"Ziel {n}")])
            try:
                write_plan(plan, vault)
                applied += 1
            except VaultError as exc:
                assert "changed since" in str(exc), exc   # refused: the note changed since it was read
                refused += 1
    finally:
        stop.touch()
        out, _ = editor.communicate(timeout=BOUND_S)
    saves = int(out)
    assert saves > 0 and applied + refused == ROUNDS
    lines = kept_lines(vault)
    lost = [k for k in range(1, saves + 1) if f"edit {k}" not in lines]
    assert lost == [], f"{len(lost)} of {saves} editor saves are in neither the note nor a backup ({applied} applied)"
    # with the editor closed, an apply goes through, on top of the note as it is
    before = note.read_text(encoding="utf-8")
    write_plan(plan_edges(vault, NOTE, [link("Zuletzt")]), vault)
    assert note.read_text(encoding="utf-8") == before.rstrip("\n") + "\n\n> [!edge] related_to: [[Zuletzt]]\n"


def test_a_refused_apply_writes_nothing(vault: Path) -> None:
    plan = plan_edges(vault, NOTE, [link("Ziel")])
    (vault / NOTE).write_text(ORIGINAL + "Neue Zeile aus dem Editor.\n", encoding="utf-8")
    with pytest.raises(VaultError, match="changed since"):
        write_plan(plan, vault)
    assert (vault / NOTE).read_text(encoding="utf-8") == ORIGINAL + "Neue Zeile aus dem Editor.\n"
    assert not (vault / BACKUP_DIR).exists()
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["suche.md"]


def test_an_applied_plan_keeps_a_findable_backup(vault: Path) -> None:
    plan = plan_edges(vault, NOTE, [link("Ziel")])
    backup = write_plan(plan, vault)
    assert backup.read_text(encoding="utf-8") == ORIGINAL
    # beside the note's own path under the backup folder, named by the note and the time of the write
    rel = backup.relative_to(vault).as_posix()
    assert rel.startswith(f"{BACKUP_DIR}/projects/suche.md.") and rel.endswith(".bak"), rel
    second = write_plan(plan_edges(vault, NOTE, [link("Noch eins")]), vault)
    assert second != backup and second.read_text(encoding="utf-8") == plan.new
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["suche.md"]


def test_undo_puts_the_backup_back_and_keeps_the_undone_text(vault: Path) -> None:
    plan = plan_edges(vault, NOTE, [link("Ziel")])
    backup = write_plan(plan, vault)
    undone = undo_plan(plan, backup, vault)
    assert (vault / NOTE).read_text(encoding="utf-8") == ORIGINAL
    assert undone != backup and undone.read_text(encoding="utf-8") == plan.new


def test_undo_of_a_note_edited_since_the_apply_writes_nothing(vault: Path) -> None:
    plan = plan_edges(vault, NOTE, [link("Ziel")])
    backup = write_plan(plan, vault)
    (vault / NOTE).write_text(plan.new + "Neue Zeile aus dem Editor.\n", encoding="utf-8")
    with pytest.raises(NoteChangedError, match="changed since"):
        undo_plan(plan, backup, vault)
    assert (vault / NOTE).read_text(encoding="utf-8") == plan.new + "Neue Zeile aus dem Editor.\n"
    assert backup.read_text(encoding="utf-8") == ORIGINAL


# --------------------------------------------------------------------------- a write that fails half-way

FSIZE_CHILD = r"""
import json, resource, signal, sys
from pathlib import Path
from mindnet.chat.drafts import save_draft
from mindnet.chat.sanitizer import normalize_meta_and_body
from mindnet.settings import InterviewSchema
vault, limit, body, overwrite, replaces = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5]
draft = normalize_meta_and_body("---\ntitle: Gross\n---\n" + body, note_type="decision", schema=InterviewSchema())
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)          # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    kwargs = {"overwrite": True, "replaces": replaces or None} if overwrite else {}
    save_draft(draft, vault_root=Path(vault), folder="decisions", **kwargs)
    print(json.dumps({"saved": True}))
except Exception as exc:
    print(json.dumps({"saved": False, "error": type(exc).__name__, "message": str(exc)}))
"""


def save_with_file_size_limit(vault: Path, body: str, limit: int, *, overwrite: bool = False,
                              replaces: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(vault), str(limit), body,
                          "1" if overwrite else "0", replaces],
                         capture_output=True, text=True, timeout=BOUND_S,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def draft_text(body: str) -> tuple:
    from mindnet.chat.sanitizer import normalize_meta_and_body
    from mindnet.settings import InterviewSchema
    return normalize_meta_and_body("---\ntitle: Gross\n---\n" + body, note_type="decision", schema=InterviewSchema())


def test_a_write_past_the_file_size_limit_leaves_nothing_and_the_retry_saves(tmp_path: Path) -> None:
    """A real EFBIG (RLIMIT_FSIZE in a child process), the same failure path as a full disk."""
    from mindnet.chat.drafts import save_draft
    vault = tmp_path / "vault"
    (vault / "decisions").mkdir(parents=True)
    body = "# Gross\n\n" + "Ein langer Absatz über die Entscheidung. " * 500     # ~20 KB
    result = save_with_file_size_limit(vault, body, limit=4096)
    assert sorted(p.name for p in (vault / "decisions").iterdir()) == []     # no cut-off note, no temp file
    assert result["saved"] is False and "File too large" in result["message"], result
    assert result["error"] == "VaultWriteError", result
    path = save_draft(draft_text(body), vault_root=vault, folder="decisions").path   # the retry: no "already exists"
    assert path.read_text(encoding="utf-8") == draft_text(body).to_markdown()


def test_an_overwrite_past_the_file_size_limit_keeps_the_note_as_it_was(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "decisions").mkdir(parents=True)
    path = vault / "decisions" / "Gross.md"
    path.write_text(draft_text("# Gross\n\nkurz\n").to_markdown(), encoding="utf-8")
    before = path.read_bytes()
    body = "# Gross\n\n" + "Viel mehr Text als vorher. " * 800
    result = save_with_file_size_limit(vault, body, limit=4096, overwrite=True,
                                       replaces=hashlib.sha256(before).hexdigest())
    assert (result["saved"], result.get("error")) == (False, "VaultWriteError"), result
    assert path.read_bytes() == before
    assert sorted(p.name for p in (vault / "decisions").iterdir()) == ["Gross.md"]
    assert not (vault / BACKUP_DIR).exists() or not any((vault / BACKUP_DIR).rglob("*.bak"))
