"""`read_vault`: a vault's notes as LlamaIndex `Document`s, ready for `MarkdownNoteParser` in any pipeline."""

from __future__ import annotations

import logging
from pathlib import Path

from llama_index.core.schema import Document

from mindnet.errors import VaultError
from mindnet.settings import TypesConfig, shipped_types
from mindnet.vault.scan import iter_markdown_files

log = logging.getLogger(__name__)


def read_vault(vault: str | Path, *, types: TypesConfig | None = None) -> list[Document]:
    """One `Document` per note below `vault` (hidden folders, `exclude` globs and oversized files left out),
    with `metadata["path"]` the vault-relative path that note ids and type rules depend on.

    `types` defaults to the shipped types.yaml (its `exclude` and `max_file_bytes`). A file that is not UTF-8
    or too large is skipped with a logged warning; the rest is read.
    """
    root = Path(vault).expanduser()
    if not root.is_dir():
        raise VaultError("the vault is not a folder", path=str(root), hint="pass the folder that holds your notes")
    types = types or shipped_types()
    docs: list[Document] = []
    for path in iter_markdown_files(root, types.exclude):
        rel = path.relative_to(root).as_posix()
        if path.stat().st_size > types.max_file_bytes:
            log.warning("skipping %s: larger than max_file_bytes (%d)", rel, types.max_file_bytes)
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            log.warning("skipping %s: not valid UTF-8 (%s); re-save it as UTF-8", rel, exc.reason)
            continue
        docs.append(Document(id_=rel, text=text, metadata={"path": rel}))
    return docs
