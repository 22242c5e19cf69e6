"""save_draft: writes inside the vault only, never over an existing note unless asked, and then only over the
version the user saw, with a backup."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from pathlib import Path

import pytest

from mindnet.chat.drafts import draft_filename, save_draft
from mindnet.chat.sanitizer import NoteDraft, empty_draft, normalize_meta_and_body
from mindnet.errors import DraftConflictError, DraftError
from mindnet.safe_write import BACKUP_DIR, version_of
from mindnet.settings import InterviewSchema

SCHEMA = InterviewSchema(required=["title", "status"], sections=["Ziel"])
NOW = datetime(2025, 3, 4)


def draft(title: str = "Gemüsegarten") -> NoteDraft:
    return empty_draft("project", SCHEMA, title=title, now=NOW)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def test_saves_into_the_folder(vault: Path) -> None:
    path = save_draft(draft(), vault_root=vault, folder="projects").path
    assert path == (vault / "projects" / "Gemüsegarten.md").resolve()


def test_saved_content_is_the_markdown(vault: Path) -> None:
    note = draft()
    path = save_draft(note, vault_root=vault, folder="projects").path
    assert path.read_text(encoding="utf-8") == note.to_markdown()


@pytest.mark.parametrize("folder", [None, ""])
def test_no_folder_saves_at_the_vault_root(vault: Path, folder: str | None) -> None:
    assert save_draft(draft(), vault_root=vault, folder=folder).path == (vault / "Gemüsegarten.md").resolve()


def test_nested_folder_is_created(vault: Path) -> None:
    path = save_draft(draft(), vault_root=vault, folder="projects/2025").path
    assert path.parent == (vault / "projects" / "2025").resolve()


@pytest.mark.parametrize("folder", ["..", "../outside", "projects/../../x", "..\\x", "/tmp",
                                    "\\\\server\\share",
                                    "C:\\notes", "C:notes"])
def test_folder_traversal_is_rejected(vault: Path, folder: str) -> None:
    with pytest.raises(DraftError, match="draft folder"):
        save_draft(draft(), vault_root=vault, folder=folder)


@pytest.mark.parametrize("title", ["../evil", "..", "a/../../b", "/etc/passwd", "\\windows"])
def test_title_traversal_is_rejected(vault: Path, title: str) -> None:
    with pytest.raises(DraftError, match="draft title"):
        save_draft(draft(title), vault_root=vault, folder="projects")


def test_rejected_draft_writes_nothing(vault: Path) -> None:
    with pytest.raises(DraftError):
        save_draft(draft("../evil"), vault_root=vault, folder="projects")
    assert list(vault.parent.rglob("*.md")) == []


def test_symlinked_folder_outside_the_vault_is_rejected(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "projects").symlink_to(outside, target_is_directory=True)
    with pytest.raises(DraftError, match="outside the vault"):
        save_draft(draft(), vault_root=vault, folder="projects")


def test_symlinked_folder_inside_the_vault_is_allowed(vault: Path) -> None:
    (vault / "real").mkdir()
    (vault / "projects").symlink_to(vault / "real", target_is_directory=True)
    path = save_draft(draft(), vault_root=vault, folder="projects").path
    assert path == (vault / "real" / "Gemüsegarten.md").resolve()


def test_symlinked_file_is_not_followed(vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.md"
    target.write_text("keep", encoding="utf-8")
    (vault / "Gemüsegarten.md").symlink_to(target)
    with pytest.raises(DraftError, match="symlink"):
        save_draft(draft(), vault_root=vault, folder=None, overwrite=True)


def test_existing_file_is_not_overwritten(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old", encoding="utf-8")
    with pytest.raises(DraftConflictError) as err:
        save_draft(draft(), vault_root=vault, folder=None)
    # the message names the file vault-relative, never with the server's absolute path
    assert (str(err.value).startswith("Gemüsegarten.md: "), str(vault) in str(err.value),
            "overwrite it" in str(err.value),
            (vault / "Gemüsegarten.md").read_text(encoding="utf-8")) == (True, False, True, "old")


def test_the_conflict_carries_both_texts_and_the_files_version(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old", encoding="utf-8")
    with pytest.raises(DraftConflictError) as err:
        save_draft(draft(), vault_root=vault, folder=None)
    assert err.value.conflict == {"reason": "exists", "path": "Gemüsegarten.md", "version": version_of(b"old"),
                                  "existing": "old", "draft": draft().to_markdown()}


def test_overwrite_replaces_the_version_it_names_and_keeps_a_backup(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old", encoding="utf-8")
    saved = save_draft(draft(), vault_root=vault, folder=None, overwrite=True, replaces=version_of(b"old"))
    assert saved.path.read_text(encoding="utf-8") == draft().to_markdown()
    assert saved.backup is not None and saved.backup.read_text(encoding="utf-8") == "old"
    assert saved.backup.parent == (vault / BACKUP_DIR).resolve()
    assert saved.version == version_of(draft().to_markdown().encode("utf-8"))


def test_overwrite_of_a_note_that_changed_since_is_refused(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old\nand a line typed since", encoding="utf-8")
    with pytest.raises(DraftConflictError, match="changed since it was shown") as err:
        save_draft(draft(), vault_root=vault, folder=None, overwrite=True, replaces=version_of(b"old"))
    assert (err.value.conflict["reason"], err.value.conflict["existing"]) == ("changed", "old\nand a line typed since")
    assert (vault / "Gemüsegarten.md").read_text(encoding="utf-8") == "old\nand a line typed since"
    assert not (vault / BACKUP_DIR).exists() or not any((vault / BACKUP_DIR).rglob("*.bak"))


def test_overwrite_without_a_version_is_refused(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old", encoding="utf-8")
    with pytest.raises(DraftConflictError, match="must name the version") as err:
        save_draft(draft(), vault_root=vault, folder=None, overwrite=True)
    assert (err.value.conflict["reason"], err.value.conflict["version"]) == ("version needed", version_of(b"old"))
    assert (vault / "Gemüsegarten.md").read_text(encoding="utf-8") == "old"


def test_overwrite_of_a_note_deleted_since_is_refused(vault: Path) -> None:
    with pytest.raises(DraftConflictError, match="no note at this path to replace") as err:
        save_draft(draft(), vault_root=vault, folder=None, overwrite=True, replaces=version_of(b"old"))
    assert (err.value.conflict["existing"], err.value.conflict["version"]) == (None, None)
    assert not (vault / "Gemüsegarten.md").exists()


def with_body(body: str) -> NoteDraft:
    return draft().model_copy(update={"body": body})


def test_merge_keeps_the_note_whole_and_appends_the_drafts_body_with_a_backup(vault: Path) -> None:
    old = "---\ntitle: Gemüsegarten\n---\n# Gemüsegarten\n\nSiehe [[Zettelkasten]].\n> [!edge] related_to: [[qdrant]]\n"
    (vault / "Gemüsegarten.md").write_text(old, encoding="utf-8")
    saved = save_draft(with_body("# Gemüsegarten\n\n## Ziel\nTomaten."), vault_root=vault, folder=None,
                       merge=True, replaces=version_of(old.encode("utf-8")))
    # the heading that only repeats the title is left out; no second frontmatter
    assert saved.path.read_text(encoding="utf-8") == old + "\n## Ziel\nTomaten.\n"
    assert saved.backup is not None and saved.backup.read_text(encoding="utf-8") == old


def test_merge_keeps_the_notes_line_endings(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_bytes(b"alt\r\nzwei\r\n")
    saved = save_draft(with_body("neu\nmehr"), vault_root=vault, folder=None, merge=True,
                       replaces=version_of(b"alt\r\nzwei\r\n"))
    assert saved.path.read_bytes() == b"alt\r\nzwei\r\n\r\nneu\r\nmehr\r\n"


def test_merge_into_a_note_that_changed_since_is_refused(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old\nand a line typed since", encoding="utf-8")
    with pytest.raises(DraftConflictError, match="changed since it was shown") as err:
        save_draft(with_body("neu"), vault_root=vault, folder=None, merge=True, replaces=version_of(b"old"))
    # the conflict shows the draft as it is, not the merged note
    assert (err.value.conflict["existing"], err.value.conflict["draft"]) == (
        "old\nand a line typed since", with_body("neu").to_markdown())
    assert (vault / "Gemüsegarten.md").read_text(encoding="utf-8") == "old\nand a line typed since"


def test_merge_into_a_note_deleted_since_is_refused(vault: Path) -> None:
    with pytest.raises(DraftConflictError, match="no note at this path to add to") as err:
        save_draft(with_body("neu"), vault_root=vault, folder=None, merge=True, replaces=version_of(b"old"))
    assert err.value.conflict["version"] is None and not (vault / "Gemüsegarten.md").exists()


def test_merge_of_a_draft_without_text_is_refused(vault: Path) -> None:
    (vault / "Gemüsegarten.md").write_text("old", encoding="utf-8")
    with pytest.raises(DraftError, match="no text below its frontmatter"):
        save_draft(with_body("# Gemüsegarten\n"), vault_root=vault, folder=None, merge=True,
                   replaces=version_of(b"old"))
    assert (vault / "Gemüsegarten.md").read_text(encoding="utf-8") == "old"


def test_overwrite_leaves_no_temp_files(vault: Path) -> None:
    saved = save_draft(draft(), vault_root=vault, folder=None)
    save_draft(draft("Gemüsegarten"), vault_root=vault, folder=None, overwrite=True, replaces=saved.version)
    assert sorted(p.name for p in vault.iterdir()) == [".mindnet", "Gemüsegarten.md"]


def test_missing_vault_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(DraftError, match="vault folder does not exist"):
        save_draft(draft(), vault_root=tmp_path / "nope", folder=None)


def test_folder_that_is_a_file_is_rejected(vault: Path) -> None:
    (vault / "projects").write_text("x", encoding="utf-8")
    with pytest.raises(DraftError, match="is a file"):
        save_draft(draft(), vault_root=vault, folder="projects")


@pytest.mark.parametrize(("title", "name"), [
    ("Gemüsegarten", "Gemüsegarten.md"),
    ("Projekt: Garten", "Projekt - Garten.md"),
    ('Pros/Cons <A|B> "x"?*', "Pros-Cons -A-B- -x.md"),
    ("...versteckt", "versteckt.md"),
    ("Tab\tund\nZeile", "Tab-und-Zeile.md"),
    ("???", "fallback-id.md"),
    ("CON", "CON_.md"),
    ("nul.txt", "nul_.txt.md"),          # Windows reserves the device name with any extension
    ("prn.tar.gz", "prn_.tar.gz.md"),
    ("COM0", "COM0_.md"), ("LPT0", "LPT0_.md"), ("COM\u00b9", "COM\u00b9_.md"), ("lpt\u00b3 ", "lpt\u00b3_.md"),
    ("Lpt9 notes", "Lpt9 notes.md"),
    ("Vor...und nach", "Vor...und nach.md"),
])
def test_draft_filename(title: str, name: str) -> None:
    assert draft_filename(title, fallback="fallback-id") == name


def test_long_titles_are_capped() -> None:
    assert len(draft_filename("ä" * 300, fallback="x").encode("utf-8")) <= 200 + len(".md")


def test_long_titles_that_share_their_start_stay_two_files() -> None:
    first, second = draft_filename("ä" * 300, fallback="x"), draft_filename("ä" * 299 + "b", fallback="x")
    assert first != second and first[:90] == second[:90]
    assert all(len(n.encode("utf-8")) <= 203 for n in (first, second))


@pytest.mark.parametrize("existing", [
    unicodedata.normalize("NFD", "Größe.md"),      # the same name decomposed (macOS, some sync tools)
    "größe.md",                                     # case only
    "GRÖSSE.md",                                    # case-folded: ß and SS
])
def test_a_twin_of_an_existing_note_is_a_conflict_with_it(vault: Path, existing: str) -> None:
    (vault / "concepts").mkdir(exist_ok=True)
    (vault / "concepts" / existing).write_text("# Alt\n\nDer Text des Nutzers.", encoding="utf-8")
    draft = normalize_meta_and_body("---\ntitle: Größe\n---\n# Größe\n\nNeu.", note_type="concept",
                                    schema=InterviewSchema())
    with pytest.raises(DraftConflictError) as conflict:
        save_draft(draft, vault_root=vault, folder="concepts")
    assert conflict.value.conflict["path"] == f"concepts/{existing}"
    assert [p.name for p in (vault / "concepts").iterdir()] == [existing]     # no twin beside it


def test_unsafe_chars_in_title_still_save(vault: Path) -> None:
    path = save_draft(draft("Pros/Cons"), vault_root=vault, folder=None).path
    assert path.name == "Pros-Cons.md"


def test_saving_twice_is_rejected(vault: Path) -> None:
    save_draft(draft(), vault_root=vault, folder=None)
    with pytest.raises(DraftError, match="already exists"):
        save_draft(draft(), vault_root=vault, folder=None)


def test_overwriting_keeps_the_notes_file_mode(tmp_path):
    import os

    from mindnet.chat.drafts import save_draft
    from mindnet.chat.sanitizer import normalize_meta_and_body
    from mindnet.settings import InterviewSchema
    draft = normalize_meta_and_body("---\ntitle: Keep Mode\n---\nbody", note_type="decision", schema=InterviewSchema())
    saved = save_draft(draft, vault_root=tmp_path, folder="decisions")
    os.chmod(saved.path, 0o644)
    save_draft(draft, vault_root=tmp_path, folder="decisions", overwrite=True, replaces=saved.version)
    assert saved.path.stat().st_mode & 0o777 == 0o644
