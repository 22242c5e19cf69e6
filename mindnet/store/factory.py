"""Opening the store the settings name: a Qdrant server at MINDNET_QDRANT_URL, else the embedded Qdrant Edge
index in MINDNET_QDRANT_PATH (one process at a time; a second is told which process holds it)."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from mindnet.settings import Settings
from mindnet.store.collections import CollectionLayout
from mindnet.store.edge import EdgeStore
from mindnet.store.engine import Store
from mindnet.store.folder import FolderClaim, legacy_files, missing_index_error
from mindnet.store.space import DEFAULT_MIN_FREE_MB

MEMORY = ":memory:"


class TemporaryEdgeStore(EdgeStore):
    """An embedded index in a temporary folder, removed when closed or garbage-collected (`:memory:`: tests,
    one-off evaluations)."""

    def __init__(self, prefix: str = "mindnet") -> None:
        tmp = tempfile.mkdtemp(prefix="mindnet-index-")
        super().__init__(Path(tmp), prefix)
        self._finalizer = weakref.finalize(self, _remove, self._shards, self._claim, tmp)

    def close(self) -> None:
        self._closed = True
        self._finalizer()


def _remove(shards: dict, claim: FolderClaim, folder: str) -> None:
    for shard in shards.values():
        shard.close()
    shards.clear()
    claim.release()
    shutil.rmtree(folder, ignore_errors=True)


def open_store(settings: Settings, *, create: bool = True, process: bool = False) -> Store:
    """The index the settings name. `create=False` (a read-only command) opens an existing embedded index only:
    a missing folder is an error naming it, and nothing is written into the working folder. `process`: an
    embedded index is held by a child process (`mindnet serve`: `edge_process`)."""
    if settings.qdrant_url:
        from mindnet.store.server import ServerStore  # qdrant-client costs ~3 s to import: only for a server

        return ServerStore.connect(settings.qdrant_url, settings.collection_prefix, api_key=settings.qdrant_api_key,
                                   layout=CollectionLayout.from_settings(settings))
    folder = Path(settings.qdrant_path).expanduser()
    if not create and str(folder) != MEMORY and not folder.is_dir():
        raise missing_index_error(folder.resolve(), Path(settings.vault_root).expanduser().resolve())
    return open_folder(folder, settings.collection_prefix, create=create, min_free_mb=settings.min_free_mb,
                       process=process)


def open_folder(folder: Path | str, prefix: str = "mindnet", *, create: bool = True,
                min_free_mb: float = DEFAULT_MIN_FREE_MB, process: bool = False) -> Store:
    if str(folder) == MEMORY:
        return TemporaryEdgeStore(prefix)
    folder = Path(folder).expanduser()
    if not create and not folder.is_dir():
        raise missing_index_error(folder.resolve())
    if process:
        from mindnet.store.edge_process import EdgeProcessStore

        return EdgeProcessStore(folder, prefix, create=create, min_free_mb=min_free_mb)
    return EdgeStore(folder, prefix, create=create, min_free_mb=min_free_mb)


def open_location(location: str | Path, prefix: str = "mindnet", *, api_key: str | None = None) -> Store:
    """A Qdrant server for an http(s) URL, else the embedded index folder (or ":memory:")."""
    text = str(location)
    if text.startswith(("http://", "https://")):
        from mindnet.store.server import ServerStore

        return ServerStore.connect(text, prefix, api_key=api_key)
    return open_folder(text, prefix)


def needs_rebuild(folder: Path | str, prefix: str) -> str | None:
    """Why an embedded folder cannot be searched as it is (an index of an older mindnet), or None."""
    folder = Path(folder)
    if str(folder) == MEMORY or not folder.is_dir():
        return None
    if legacy_files(folder) and not (folder / f"{prefix}_chunks").exists():
        return (f"the index at {folder} was built by an older mindnet (qdrant-client's local mode); run "
                f"`mindnet ingest` once to rebuild it with Qdrant Edge (the vectors come from the embedding cache: "
                f"nothing is embedded again)")
    return None
