"""Which vault an index belongs to, for `Mindnet` (`mindnet.service`): an import into an index built from
another vault that still exists is refused (it would replace that vault's notes); a vault that moved or was
copied is followed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.errors import VaultMismatchError
from mindnet.store.folder import read_vault

if TYPE_CHECKING:
    import threading

    from mindnet.settings import Settings
    from mindnet.store.engine import Store

log = logging.getLogger("mindnet.service")   # the name it had in service.py, so log filters stay as they were


class VaultMixin:
    """`recorded_vault` / `check_vault` of `Mindnet`, and the record an import leaves in the index."""

    if TYPE_CHECKING:     # given by `Mindnet`
        settings: Settings
        index_lock: threading.RLock

        @property
        def store(self) -> Store: ...

        @property
        def opened(self) -> bool: ...

        def _local_folder(self) -> Path | None: ...

    def recorded_vault(self) -> str | None:
        """The vault this index was built from (its resolved path); None before the first complete import."""
        folder = self._local_folder()
        if folder is not None and not self.opened:
            return read_vault(folder, self.settings.collection_prefix)
        with self.index_lock:
            return self.store.read_vault() if self.store.exists("notes") else None

    def check_vault(self, vault: Path | None = None, *, full: bool = False) -> None:
        """Raise VaultMismatchError when the index was built from another vault that still exists: importing this
        one would replace its notes. A rebuild (`full`) is the way to do that on purpose; a vault that moved
        (the recorded folder is gone) or was copied (most of the indexed notes are in this folder too, as with
        a vault and its index restored or copied elsewhere) is followed."""
        current = Path(vault or self.settings.vault_root).resolve()
        recorded = self.recorded_vault()
        if full or not recorded or Path(recorded) == current or not Path(recorded).is_dir():
            return
        if self._same_notes(current):
            log.info("the vault %s holds the notes of the index built from %s (a copy), or the index holds none: "
                     "followed", current, recorded)
            return
        where = self.store.location if self.opened else str(self._local_folder() or self.settings.qdrant_url)
        raise VaultMismatchError(
            f"the index {where} was built from the vault {recorded}, not from {current}; importing {current.name!r} "
            f"into it would replace that vault's notes, so nothing was done. Give this vault an index of its own "
            f"(--index DIR, or MINDNET_QDRANT_PATH=DIR), or set MINDNET_VAULT_ROOT={recorded} to go on with that "
            f"one; to rebuild this index from {current.name!r} on purpose: mindnet ingest {current} --full")

    def _same_notes(self, vault: Path, sample: int = 50) -> bool:
        """At least half of (up to `sample`) indexed notes are files of `vault` at the same paths, or the index
        holds no notes (nothing to replace: a notes collection deleted is rebuilt from this vault)."""
        paths: list[str] = []
        with self.index_lock:
            if self.store.exists("notes"):
                for record in self.store.scroll("notes", payload=["path"]):
                    paths.append(str(record.payload.get("path") or ""))
                    if len(paths) >= sample:
                        break
        found = sum(1 for p in paths if p and (vault / p).is_file())
        return 2 * found >= len(paths)

    def _record_vault(self, vault: Path) -> None:
        """The index belongs to `vault` now. An unchanged import leaves the index closed: it is opened only when
        the record must change (a first import by an older mindnet, a vault that moved)."""
        if self.opened or self.recorded_vault() != str(vault.resolve()):
            with self.index_lock:
                if self.store.exists("notes"):
                    self.store.write_vault(str(vault.resolve()))
