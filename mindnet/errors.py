"""The one exception tree of mindnet.

    MindnetError
    ├── ConfigError          a YAML file or a setting is wrong (names file and key)
    ├── VaultError           a note cannot be read or parsed (names file and line)
    │   ├── DraftError       an interview draft cannot be saved (path, size, traversal)
    │   │   └── DraftConflictError  the file or the id already belongs to another note, or the note changed
    │   │                           since it was shown (`conflict`: both texts and the file's version)
    │   ├── NoteChangedError  a note changed since it was read; nothing was written (`current`, `version`)
    │   ├── VaultWriteError  writing into the vault failed (disk full, file too large, read-only): nothing was
    │   │                    written and nothing is left behind
    │   └── NoteBudgetExceeded  reading one note ran past its time budget (the import keeps what it read)
    ├── EmbeddingError       the embedding backend failed or returned a bad vector
    ├── StoreError           Qdrant cannot be opened or used
    │   ├── StoreLockedError another process holds the embedded index folder
    │   ├── DimensionMismatchError  collection built with another embedding size
    │   ├── EmptyIndexError  nothing imported yet
    │   ├── ImportRunningError  an import is already running in this process
    │   ├── VaultMismatchError  the index was built from another vault (nothing is written)
    │   ├── MassDeleteError  an import would delete over half of the index's notes, unconfirmed
    │   └── IndexRebuildingError  a full rebuild is writing the index (or stopped half-way): searches wait
    ├── DataWriteError       writing mindnet's data folder failed (disk full, read-only; names the file): what
    │                        was there before is intact
    ├── QueryError           a retrieval request is invalid (names the field)
    │   └── InputTooLargeError  a text to analyse is over the configured size limit
    ├── NoteNotFoundError    no note in the index has the given id or path
    └── LLMUnavailableError  Ollama is unreachable or the model is missing

Messages say what was wrong, with the value, where, and how to fix it.
"""

from __future__ import annotations


class MindnetError(Exception):
    """Base class of every error mindnet raises on purpose."""


class ConfigError(MindnetError):
    pass


class VaultError(MindnetError):
    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 hint: str | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.hint = hint
        where = path or ""
        if line is not None:
            where = f"{where}:{line}"
        text = f"{where}: {message}" if where else message
        if hint:
            text = f"{text} (fix: {hint})"
        super().__init__(text)


class NoteBudgetExceeded(VaultError):
    """Reading a note ran past its budget at body line `line` (0-based); the import keeps the lines before it
    (`mindnet.vault.budget`)."""

    def __init__(self, line: int, seconds: float) -> None:
        super().__init__(f"reading the note took over {seconds:g} s (stopped at body line {line + 1})")
        self.line = line
        self.seconds = seconds


class DraftError(VaultError):
    pass


class DraftConflictError(DraftError):
    """`conflict` (when a file is in the way): `reason` ("exists", "changed", "version needed"), `path`,
    `version` (of the file now; None when it is gone), `existing` (its text) and `draft` (the text to save)."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None,
                 conflict: dict[str, object] | None = None) -> None:
        super().__init__(message, path=path, hint=hint)
        self.conflict = conflict


class NoteChangedError(VaultError):
    """The note is not the version the write was planned on (`expected`); `current` is its text now (None: it is
    gone) and `version` that text's version."""

    def __init__(self, message: str, *, path: str, hint: str | None = None, expected: str,
                 current: bytes | None, version: str | None) -> None:
        super().__init__(message, path=path, hint=hint)
        self.expected = expected
        self.current = current
        self.version = version


class VaultWriteError(VaultError):
    """Writing a file of the vault failed (`errno`: the OS error, e.g. ENOSPC); nothing was left behind."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None,
                 errno: int | None = None) -> None:
        super().__init__(message, path=path, hint=hint)
        self.errno = errno


class EmbeddingError(MindnetError):
    pass


class StoreError(MindnetError):
    pass


class StoreLockedError(StoreError):
    pass


class DimensionMismatchError(StoreError):
    pass


class EmptyIndexError(StoreError):
    pass


class ImportRunningError(StoreError):
    pass


class VaultMismatchError(StoreError):
    """The index was built from another vault than the one this import reads: nothing is written (it would
    replace that vault's notes)."""


class MassDeleteError(StoreError):
    """An import would delete more than half of the index's notes (a wrong or unmounted vault folder?) and was
    not confirmed: nothing is written."""

    def __init__(self, message: str, *, deleting: int, indexed: int) -> None:
        super().__init__(message)
        self.deleting = deleting
        self.indexed = indexed


class IndexRebuildingError(StoreError):
    """A full rebuild is writing the index, or one stopped before it finished: no search is answered from half an
    index (HTTP 503 with Retry-After)."""

    def __init__(self, message: str, *, retry_after: int = 10) -> None:
        super().__init__(message)
        self.retry_after = retry_after



class DataWriteError(MindnetError):
    """Writing a file of the data folder (a log, the cache, the conversations) failed; the file is as before."""

    def __init__(self, message: str, *, path: str | None = None, errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno


class QueryError(MindnetError):
    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class InputTooLargeError(QueryError):
    pass


class NoteNotFoundError(MindnetError):
    pass


class LLMUnavailableError(MindnetError):
    """No answer from the LLM. `failed`: Ollama was there and answered the call with an error (asking again may
    work); otherwise it could not be asked (unreachable, no such model)."""

    def __init__(self, message: str, *, failed: bool = False) -> None:
        super().__init__(message)
        self.failed = failed
