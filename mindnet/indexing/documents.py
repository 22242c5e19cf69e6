"""`read_vault`: a vault's notes as LlamaIndex `Document`s, ready for `MarkdownNoteParser` in any pipeline."""

from __future__ import annotations

import logging
from pathlib import Path

from llama_index.core.schema import Document

from mindnet.errors import VaultError
from mindnet.settings import TypesConfig, shipped_types
from mindnet.vault.note import read_regular_file
from mindnet.vault.scan import Issue, iter_markdown_files

log = logging.getLogger(__name__)


def read_vault(vault: str | Path, *, types: TypesConfig | None = None) -> list[Document]:
    """One `Document` per note below `vault` (hidden folders, `exclude` globs and oversized files left out),
    with `metadata["path"]` the vault-relative path that note ids and type rules depend on.

    `types` defaults to the shipped types.yaml (its `exclude` and `max_file_bytes`). A file that is not UTF-8
    or too large, and anything that is not a regular file inside the vault (a FIFO, a symlink loop or a link out
    of the vault), is skipped with a logged warning; the rest is read.
    """
    root = Path(vault).expanduser()
    if not root.is_dir():
        raise VaultError("the vault is not a folder", path=str(root), hint="pass the folder that holds your notes")
    types = types or shipped_types()
    docs: list[Document] = []
    issues: list[Issue] = []      # symlink loops, FIFOs, links out of the vault, folders that cannot be listed
    for path in iter_markdown_files(root, types.exclude, issues):
        rel = path.relative_to(root).as_posix()
        try:
            raw, _ = read_regular_file(path, rel, types.max_file_bytes)   # never blocks on a FIFO
            text = raw.decode("utf-8")
        except VaultError as exc:
            log.warning("skipping %s", exc)
            continue
        except OSError as exc:
            log.warning("skipping %s: cannot read file (%s)", rel, exc.strerror or exc)
            continue
        except UnicodeDecodeError as exc:
            log.warning("skipping %s: not valid UTF-8 (%s); re-save it as UTF-8", rel, exc.reason)
            continue
        docs.append(Document(id_=rel, text=text, metadata={"path": rel}))
    for issue in issues:
        log.warning("skipping %s", issue)
    return docs
