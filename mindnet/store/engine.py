"""The store interface: everything the import, the retriever, `check`, the analysis and the live index read or
write goes through a `Store`, one of two engines:

    EdgeStore    Qdrant Edge in-process (the embedded default): one Edge shard per collection in a folder
                 (`mindnet.store.edge`)
    ServerStore  a Qdrant server or cluster through qdrant-client (MINDNET_QDRANT_URL) (`mindnet.store.server`)

Both hold the same three collections (`<prefix>_notes`, `_chunks`, `_edges`; `mindnet.store.collections`) with
the same vector names, payloads and payload indexes, and answer the same calls with the same results: the
sparse vectors are mindnet's own BM25 vectors (IDF applied by the engine), dense search is exact below a
configured size. Collections are named here by their kind: "notes", "chunks", "edges".

Points, records and filters are mindnet's own small types (below), so no caller depends on either client.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

KINDS = ("notes", "chunks", "edges")
Fields = bool | Sequence[str]          # the payload to return: all (True), none (False) or these keys


@dataclass(frozen=True)
class Sparse:
    """A sparse vector: sorted unique indices and their values."""

    indices: list[int]
    values: list[float]


@dataclass
class Point:
    """A point to write: its id (a UUID string, `collections.point_id`), payload and vectors (None: none)."""

    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None
    sparse: Sparse | None = None


@dataclass
class Record:
    """A point read back: id, payload (the fields asked for), the vectors asked for (None where the point has
    none), and for a search hit its score. Dense vectors come back L2-normalised (cosine collections)."""

    id: str
    payload: dict[str, Any]
    dense: np.ndarray | None = None
    sparse: Sparse | None = None
    score: float = 0.0


@dataclass(frozen=True)
class Where:
    """A filter, the same on both engines (every field it names has a payload index): each `match` (key, values)
    holds one of the values, no `exclude` (key, values) does, the id is one of `ids`, the point has no
    vector named `without` (chunks not embedded yet), and a value (not null or empty) for each key in `present`."""

    match: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    exclude: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    ids: tuple[str, ...] | None = None
    without: str | None = None
    present: tuple[str, ...] = ()

    @classmethod
    def field(cls, key: str, *values: Any) -> Where:
        return cls(match=((key, tuple(values)),))

    @classmethod
    def fields(cls, **values: Sequence[Any]) -> Where:
        """`Where.fields(type=[...], tags=[...])`: every non-empty list must match (empty lists are skipped)."""
        return cls(match=tuple((k, tuple(v)) for k, v in values.items() if v))

    def and_(self, other: Where | None) -> Where:
        if other is None:
            return self
        ids = self.ids if other.ids is None else other.ids if self.ids is None else \
            tuple(set(self.ids) & set(other.ids))
        return Where(self.match + other.match, self.exclude + other.exclude, ids, self.without or other.without,
                     self.present + other.present)

    @property
    def empty(self) -> bool:
        return not (self.match or self.exclude or self.present) and self.ids is None and self.without is None


@dataclass
class SearchParams:
    """How a dense search runs: exact (a full scan, the same hits every time) or HNSW with `ef`."""

    exact: bool = True
    hnsw_ef: int | None = None


class Store(ABC):
    """One mindnet index (three collections of one prefix) in one engine. Not thread-safe by itself: mindnet
    serialises its use through `Mindnet.index_lock` (imports and searches take turns step by step)."""

    prefix: str
    location: str                   # where the index is, for messages: the folder or the server's URL
    folder: Path | None = None      # the index folder of an embedded store (None: a server)

    # ------------------------------------------------------------------ collections

    @abstractmethod
    def exists(self, kind: str) -> bool:
        """Whether the collection of this kind exists."""

    def complete(self) -> bool:
        return all(self.exists(k) for k in KINDS)

    def opened(self, kind: str) -> bool:
        """Whether this collection is open now, so that reading it costs no opening (an embedded shard takes
        ~0.1 s to open, all of it holding the interpreter lock)."""
        return True

    @abstractmethod
    def create(self, dim: int) -> None:
        """Create the missing collections (chunks with a `dim`-d cosine vector and the IDF sparse vector) and
        their payload indexes. Raises DimensionMismatchError for a chunks collection of another size."""

    @abstractmethod
    def dim(self) -> int | None:
        """The chunks' dense vector size (None: no chunks collection)."""

    @abstractmethod
    def drop(self) -> None:
        """Delete the three collections (a full rebuild)."""

    # ------------------------------------------------------------------ writing

    @abstractmethod
    def upsert(self, kind: str, points: Sequence[Point]) -> None: ...

    @abstractmethod
    def set_dense(self, kind: str, vectors: dict[str, list[float]]) -> None:
        """Add (or replace) the dense vector of existing points, keeping their payload and sparse vector."""

    @abstractmethod
    def delete(self, kind: str, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def delete_where(self, kind: str, where: Where) -> None: ...

    def flush(self) -> None:  # noqa: B027 - nothing to do for an engine whose writes return durable
        """Make what was written durable now (each write returns durable already where the engine has a WAL)."""

    def optimize(self, *, hnsw: bool = True) -> None:  # noqa: B027 - a server optimises by itself
        """Rewrite what was written into the engine's optimised segments now (with the HNSW graph when `hnsw`),
        where the engine does not do it by itself."""

    # ------------------------------------------------------------------ reading

    @abstractmethod
    def retrieve(self, kind: str, ids: Sequence[str], *, payload: Fields = True, dense: bool = False,
                 sparse: bool = False) -> list[Record]:
        """The points with these ids that exist (in no particular order)."""

    @abstractmethod
    def scroll(self, kind: str, where: Where | None = None, *, payload: Fields = True, dense: bool = False,
               sparse: bool = False, page: int | None = None) -> Iterator[Record]:
        """Every point (matching `where`), page by page (`page` points per engine call: None for the engine's
        default, kept short for a server's other threads)."""

    @abstractmethod
    def count(self, kind: str, where: Where | None = None) -> int: ...

    @abstractmethod
    def search_dense(self, vector: Sequence[float], limit: int, where: Where | None = None, *,
                     payload: Fields = False, dense: bool = False, params: SearchParams | None = None
                     ) -> list[Record]:
        """The chunks nearest to `vector` (cosine, best first)."""

    @abstractmethod
    def search_sparse(self, vector: Sparse, limit: int, where: Where | None = None, *,
                      payload: Fields = False, dense: bool = False) -> list[Record]:
        """The chunks with the highest BM25 (IDF x stored term weights), best first, score > 0 only."""

    def facet(self, kind: str, key: str) -> dict[Any, int] | None:
        """How many points hold each value of the payload field `key` (an indexed one); None: not answered."""
        return None

    def verify_files(self) -> list[str] | None:
        """Before any read: the files of an embedded index that differ from what mindnet last left there
        (`mindnet.store.file_record`; [] for none), None when nothing is recorded (a server keeps no record)."""
        return None

    # ------------------------------------------------------------------ the import's token

    @abstractmethod
    def read_token(self) -> str | None:
        """The token the last complete import stored (None: none, or an import did not finish)."""

    @abstractmethod
    def write_token(self, token: str | None) -> bool:
        """Store the import token (None clears it); False when this store cannot keep one."""

    def read_vault(self) -> str | None:
        """The vault (its resolved path) the last complete import read into this index; None when not known."""
        return None

    def write_vault(self, vault: str) -> None:  # noqa: B027 - a store that cannot keep it knows no vault
        """Record the vault a complete import read (an import of another vault into this index is refused)."""

    # ------------------------------------------------------------------ the rest

    @abstractmethod
    def close(self) -> None:
        """Release the engine (an embedded folder can then be opened by another process)."""
