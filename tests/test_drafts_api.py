"""`POST /drafts` on a real `mindnet serve` never overwrites the user's newer text without a trace (issue 27, item 2):
a conflict answers with both texts and the note's version, an overwrite names that version and keeps a backup,
concurrent overwrites of one version let exactly one through, and on a full disk (a real small tmpfs as the vault)
a save fails with 507, leaves nothing behind and goes through once there is space again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_disk import fill, mount_tmpfs
from helpers_ui import ChatServer

from mindnet.settings import SAMPLE_VAULT

TIMEOUT = 120
DRAFT = """---
type: project
title: Balkonkräuter
status: aktiv
goal: Kräuter vom Balkon ernten
---
# Balkonkräuter

## Ziel
Kräuter vom Balkon ernten.
"""
NOTE = "projects/Balkonkräuter.md"
BACKUP_DIR = ".mindnet/backups"        # where the README says the backups are


def version_of(data: bytes) -> str:
    """A note's version as the API gives it: the SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    srv = ChatServer(tmp_path_factory.mktemp("drafts_api")).start()
    try:
        yield srv
    finally:
        srv.stop()


def post(server: ChatServer, markdown: str = DRAFT, **fields: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/drafts", json={"markdown": markdown, "note_type": "project", **fields},
                      timeout=TIMEOUT)


def fresh(server: ChatServer, name: str) -> tuple[str, Path]:
    """A draft of its own title (each test saves its own note) and the file it is saved to."""
    text = DRAFT.replace("Balkonkräuter", name)
    return text, server.vault / "projects" / f"{name}.md"


def backups_of(server: ChatServer, path: Path) -> list[Path]:
    rel = path.relative_to(server.vault).as_posix()
    return sorted((server.vault / BACKUP_DIR).glob(f"{rel}.*.bak"))


def test_overwrite_keeps_the_users_newer_text_and_a_backup(server: ChatServer) -> None:
    draft, path = fresh(server, "Kräuterkasten")
    assert post(server, draft).status_code == 200
    with path.open("a", encoding="utf-8") as fh:          # the user adds a line in Obsidian
        fh.write("\nGießen nicht vergessen.\n")
    conflict = post(server, draft).json()                 # the draft again: the UI shows the conflict
    seen = conflict["conflict"]
    assert (seen["reason"], seen["path"]) == ("exists", "projects/Kräuterkasten.md")
    assert "Gießen nicht vergessen." in seen["existing"] and "Gießen" not in seen["draft"]
    assert seen["version"] == version_of(path.read_bytes())
    with path.open("a", encoding="utf-8") as fh:          # ... and types another one while the dialog is open
        fh.write("Und düngen.\n")
    stale = post(server, draft, overwrite=True, replaces=seen["version"])
    assert stale.status_code == 409, stale.text
    assert stale.json()["conflict"]["reason"] == "changed"
    assert "Und düngen." in stale.json()["conflict"]["existing"]
    assert "Und düngen." in path.read_text(encoding="utf-8") and backups_of(server, path) == []
    now = stale.json()["conflict"]["version"]
    saved = post(server, draft, overwrite=True, replaces=now)
    assert saved.status_code == 200, saved.text
    backup = server.vault / saved.json()["backup"]
    assert saved.json()["backup"].startswith(f"{BACKUP_DIR}/projects/Kräuterkasten.md.")
    assert backup.read_text(encoding="utf-8").endswith("Gießen nicht vergessen.\nUnd düngen.\n")
    assert path.read_text(encoding="utf-8") == seen["draft"]
    assert saved.json()["version"] == version_of(path.read_bytes())


def test_overwrite_without_the_version_it_replaces_is_refused(server: ChatServer) -> None:
    draft, path = fresh(server, "Minzbeet")
    assert post(server, draft).status_code == 200
    path.write_text(path.read_text(encoding="utf-8") + "Eigene Zeile.\n", encoding="utf-8")
    blind = post(server, draft, overwrite=True)
    assert blind.status_code == 409, blind.text
    assert blind.json()["conflict"]["reason"] == "version needed"
    assert path.read_text(encoding="utf-8").endswith("Eigene Zeile.\n")


@pytest.mark.parametrize("version", ["x" * 64, "ABC", 12])
def test_a_version_that_is_not_a_hash_is_a_422(server: ChatServer, version: Any) -> None:
    r = post(server, overwrite=True, replaces=version)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "replaces", r.text


def test_concurrent_overwrites_of_one_version_let_exactly_one_through(server: ChatServer) -> None:
    draft, path = fresh(server, "Thymianecke")
    assert post(server, draft).status_code == 200
    version = version_of(path.read_bytes())
    variants = [draft.replace("Kräuter vom Balkon ernten.\n", f"Variante {i}.\n") for i in range(6)]
    with ThreadPoolExecutor(len(variants)) as pool:
        answers = list(pool.map(lambda text: post(server, text, overwrite=True, replaces=version), variants))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] + [409] * (len(variants) - 1), [a.text for a in answers]
    winner = next(a for a in answers if a.status_code == 200).json()
    assert version_of(path.read_bytes()) == winner["version"]
    assert all(a.json()["conflict"]["reason"] == "changed" for a in answers if a.status_code == 409)
    backups = backups_of(server, path)
    assert len(backups) == 1 and version_of(backups[0].read_bytes()) == version


# --------------------------------------------------------------------------- a full disk


def listing(root: Path) -> list[str]:
    """The vault's files (the write lock of an attempted overwrite aside)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != "write.lock")


@pytest.fixture(scope="module")
def full_disk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    root = tmp_path_factory.mktemp("drafts_full")
    vault_kb = sum(p.stat().st_size for p in SAMPLE_VAULT.rglob("*") if p.is_file()) // 1024
    mount_tmpfs(root / "vault", vault_kb + 1024, without="tests/test_note_writes.py (a file size limit, EFBIG)")
    srv = ChatServer(root)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        subprocess.run(["umount", "-l", str(root / "vault")], capture_output=True, timeout=30)
        shutil.rmtree(root / "vault", ignore_errors=True)


def test_a_full_disk_saves_nothing_and_the_retry_goes_through(full_disk_server: ChatServer) -> None:
    server = full_disk_server
    assert os.path.ismount(server.vault)
    draft, path = fresh(server, "Salbeitopf")
    assert post(server, draft).status_code == 200            # one note saved while there is room
    original = path.read_bytes()
    filler = fill(server.vault)
    before = listing(server.vault)
    other, other_path = fresh(server, "Schnittlauch")
    full = post(server, other)
    assert full.status_code == 507, full.text
    assert "disk is full" in full.json()["detail"] and full.json()["path"] == "projects/Schnittlauch.md"
    overwrite = post(server, draft.replace("Kräuter vom Balkon", "Salbei"), overwrite=True,
                     replaces=version_of(original))
    assert overwrite.status_code == 507, overwrite.text
    assert listing(server.vault) == before                    # no empty note, no temp file, no backup
    assert path.read_bytes() == original
    filler.unlink()                                           # space again: the same requests go through
    assert post(server, other).status_code == 200
    assert other_path.read_text(encoding="utf-8").startswith("---\n")
    saved = post(server, draft.replace("Kräuter vom Balkon", "Salbei"), overwrite=True,
                 replaces=version_of(original))
    assert saved.status_code == 200, saved.text
    assert (server.vault / saved.json()["backup"]).read_bytes() == original
