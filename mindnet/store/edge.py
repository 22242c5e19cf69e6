"""`EdgeStore`: the embedded engine, Qdrant Edge (`qdrant-edge-py`) running inside the process.

Each collection is one Edge shard in a folder under the index folder (`<folder>/<prefix>_chunks/`, ...), with
the server's data format: segments, payload indexes, exact or HNSW dense search, sparse vectors with the IDF
modifier and a write-ahead log (a write that returned survives a crash). Shards open when first used: a search
opens the chunks and notes shards, not the edges (the graph comes from its own file, `graph_file`).

A shard that cannot be opened (deleted, truncated or garbled files) is reported with its folder and the command
that rebuilds it from the vault and the embedding cache, never as a traceback.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from mindnet.errors import DataWriteError, MindnetError, StoreError, StoreLockedError
from mindnet.store import edge_convert as convert
from mindnet.store.collections import DENSE, SHARD_INDEXES, SPARSE, dimension_error, names, vector_names
from mindnet.store.edge_convert import SHARED_FIELDS, edge_filter, hashable, payload_selector, to_point, to_record
from mindnet.store.edge_layout import LAYOUT_KEY, UPKEPT, SettleFailed, index_upkeep, layout_name, settle_aside
from mindnet.store.edge_pages import (
    PAGE_BYTES,
    PAGE_POINTS,
    SCROLL_PAGE,
    CreateFailed,
    bytes_of,
    create_aside,
    pages,
    size_of,
)
from mindnet.store.engine import KINDS, Fields, Point, Record, SearchParams, Sparse, Store, Where
from mindnet.store.file_record import FileRecord, RecordKeeper
from mindnet.store.folder import FolderClaim, FolderMeta
from mindnet.store.space import DEFAULT_MIN_FREE_MB, SpaceGuard, used_bytes

log = logging.getLogger(__name__)
# Edge needs some vector in a shard's config; notes and edges hold payload only, so theirs is an unused sparse one
PAYLOAD_ONLY = "_payload_only"
REBUILD = "`mindnet ingest --full` rebuilds it from the vault and the embedding cache"
WAL_WAIT = 30.0         # seconds to wait for another process to close a shard (see EdgeStore._load)
ASIDE_FROM = 1_000      # chunks written since the last settle from which `optimize` rewrites in a child process


class EdgeStore(Store):
    """The three collections of `prefix` as Edge shards in `folder` (claimed for this process while open)."""

    def __init__(self, folder: Path | str, prefix: str = "mindnet", *, create: bool = True,
                 min_free_mb: float = DEFAULT_MIN_FREE_MB, claim: bool = True) -> None:
        self.folder = Path(folder).expanduser()
        self.location = str(self.folder)
        self.prefix = prefix
        # `claim=False`: the process that started this one holds the folder for it (`edge_process`)
        self._claim = FolderClaim.take(self.folder, create=create) if claim else None
        self._meta = FolderMeta(self.folder)
        self._names = names(prefix)
        self._shards: dict[str, qe.EdgeShard] = {}
        self._dirty: set[str] = set()       # shards written since their last flush
        self._written = 0                   # chunks written since the last settle in a child process (optimize)
        self._closed = False
        self._space = SpaceGuard(self.folder, min_free_mb)
        self._files = RecordKeeper(FileRecord(self.folder, prefix, list(self._names.values())))   # `check`

    # ------------------------------------------------------------------ shards

    def path(self, kind: str) -> Path:
        return self.folder / self._names[kind]

    def exists(self, kind: str) -> bool:
        return kind in self._shards or (self.path(kind) / "segments").is_dir()

    def opened(self, kind: str) -> bool:
        return kind in self._shards

    @contextmanager
    def _engine(self, kind: str) -> Iterator[None]:
        """Errors of the engine (a damaged file found while reading) as a StoreError naming the collection's
        folder and the command that rebuilds it."""
        try:
            yield
        except MindnetError:
            raise
        except BaseException as exc:  # noqa: BLE001 - plain Exceptions, and a Rust panic (a BaseException)
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise     # KeyboardInterrupt, SystemExit
            if "No space left on device" in str(exc) or "os error 28" in str(exc):
                raise DataWriteError(f"{self.path(kind)}: the disk is full ({exc}); free some space on it, then run "
                                     f"`mindnet check` (and what it says)", path=str(self.path(kind))) from exc
            raise StoreError(f"{self.path(kind)}: the {kind} collection is damaged ({exc}); {REBUILD}") from exc

    def _shard(self, kind: str) -> qe.EdgeShard:
        shard = self._shards.get(kind)
        if shard is not None:
            return shard
        if self._closed:
            raise StoreError(f"the index at {self.folder} was closed")
        path = self.path(kind)
        if not self.exists(kind):
            raise StoreError(f"{path}: the {kind} collection does not exist; {REBUILD}")
        self._space.check_open(path)
        self._files.before_open()
        with self._engine(kind):
            shard = self._load(path)
        self._shards[kind] = shard
        return shard

    def _load(self, path: Path) -> qe.EdgeShard:
        """Open a shard. Another process may hold its write-ahead log for a moment: the index process of a
        server that was killed finishes the call it was in, then closes the shards (`edge_process`)."""
        waited = 0.0
        while True:
            try:
                return qe.EdgeShard.load(str(path), None)
            except Exception as exc:
                if "WouldBlock" not in str(exc):
                    raise
                if waited >= WAL_WAIT:
                    raise StoreLockedError(f"{path}: another process still has this collection open (after "
                                           f"{WAL_WAIT:.0f} s); stop it (`fuser -v {path}/wal` names it), then "
                                           f"try again") from exc
            time.sleep(0.2)
            waited += 0.2

    def create(self, dim: int) -> None:
        self._space.check(what="creation of the collections")
        existing = self.dim()
        if existing is not None and existing != dim:
            raise dimension_error(self.prefix, existing, dim)
        missing = [kind for kind in KINDS if not self.exists(kind)]
        for kind in missing:
            if self.path(kind).exists():        # a folder without segments (a create that died): start it afresh
                shutil.rmtree(self.path(kind))
        if missing:
            self._files.written()
            # made by a child process (edge_pages): creating a shard and its payload indexes held this process's
            # interpreter lock for 100-400 ms per call on a busy disk
            try:
                create_aside([(self.path(kind), dim if kind == "chunks" else None, DENSE,
                               SPARSE if kind == "chunks" else PAYLOAD_ONLY, SHARD_INDEXES[kind])
                              for kind in missing])
            except CreateFailed as exc:
                for kind in missing:
                    shutil.rmtree(self.path(kind), ignore_errors=True)
                if "No space left on device" in str(exc) or "os error 28" in str(exc):
                    raise DataWriteError(f"{self.folder}: the disk is full ({exc}); free some space on it, then run "
                                         f"`mindnet ingest`", path=str(self.folder)) from exc
                raise StoreError(f"{self.folder}: creating the {', '.join(missing)} collection failed ({exc}); "
                                 f"check that the folder is writable, then run `mindnet ingest`") from exc
            for kind in missing:
                with self._engine(kind):
                    self._shards[kind] = qe.EdgeShard.load(str(self.path(kind)), None)
        if "chunks" in missing:
            self._meta.update(self.prefix, **{LAYOUT_KEY: layout_name(False)})     # as created (edge_layout)
        for kind in [k for k in UPKEPT if k not in missing]:    # a shard made before: today's indexes, once
            with self._engine(kind):
                for op in index_upkeep(kind, self._shard(kind).info().payload_schema.keys()):
                    self._writing(kind)
                    self._shard(kind).update(op)
        if existing is None:
            self._meta.update(self.prefix, dim=dim)

    def dim(self) -> int | None:
        if not self.exists("chunks"):
            return None
        value = self._meta.get(self.prefix).get("dim")
        return int(value) if isinstance(value, int) else None

    def drop(self) -> None:
        self._files.written()
        for kind in KINDS:
            shard = self._shards.pop(kind, None)
            self._dirty.discard(kind)
            if shard is not None:
                shard.close()
            if self.path(kind).exists():
                shutil.rmtree(self.path(kind))
        self._meta.update(self.prefix, dim=None, token=None, **{LAYOUT_KEY: None})

    # ------------------------------------------------------------------ writing

    def upsert(self, kind: str, points: Sequence[Point]) -> None:
        if not points:
            return
        self._space.check(need=size_of(points), what=f"write of {len(points)} {kind}")
        shared = SHARED_FIELDS.get(kind)
        if len(points) > 1 and (len(points) > PAGE_POINTS or sum(map(bytes_of, points)) > PAGE_BYTES):
            for page in pages(points, max_bytes=PAGE_BYTES, size=bytes_of):   # short engine calls (edge_pages)
                self.upsert(kind, page)        # a page: one point, or within both bounds
            return
        self._writing(kind)
        self._written += len(points) if kind == "chunks" else 0
        with self._engine(kind):
            shard = self._shard(kind)
            if shared is None or len(points) < 64:
                shard.update(qe.UpdateOperation.upsert_points([to_point(p) for p in points]))
                return
            # the fields most of these points share are set once per group of equal values (same payload stored)
            groups: dict[tuple, list[uuid.UUID]] = {}
            own: list[qe.Point] = []
            for p in points:
                common = tuple((k, hashable(v)) for k in shared if (v := p.payload.get(k)) is not None)
                pid = uuid.UUID(p.id)
                groups.setdefault(common, []).append(pid)
                keys = {k for k, _ in common}
                own.append(to_point(Point(p.id, {k: v for k, v in p.payload.items() if k not in keys},
                                        p.dense, p.sparse)))
            shard.update(qe.UpdateOperation.upsert_points(own))
            for common, ids in groups.items():
                if common:
                    shard.update(qe.UpdateOperation.set_payload(
                        ids, {k: list(v) if isinstance(v, tuple) else v for k, v in common}))

    def set_dense(self, kind: str, vectors: dict[str, list[float]]) -> None:
        if vectors:
            dim = len(next(iter(vectors.values())))
            self._space.check(need=len(vectors) * dim * 8, what=f"write of {len(vectors)} vectors")
            self._writing(kind)
            self._written += len(vectors) if kind == "chunks" else 0
            for page in pages(list(vectors.items())):
                with self._engine(kind):
                    self._shard(kind).update(qe.UpdateOperation.update_vectors(
                        [qe.PointVectors(uuid.UUID(pid), {DENSE: v.tolist() if isinstance(v, np.ndarray) else list(v)})
                         for pid, v in page]))

    def delete(self, kind: str, ids: Sequence[str]) -> None:
        if ids:
            self._writing(kind)
        for page in pages(ids):
            with self._engine(kind):
                self._shard(kind).update(qe.UpdateOperation.delete_points([uuid.UUID(i) for i in page]))

    def delete_where(self, kind: str, where: Where) -> None:
        # the ids first, then deleted a page at a time: one delete by filter of a large note's edges is one
        # long engine call (edge_pages)
        self.delete(kind, [r.id for r in self.scroll(kind, where, payload=False)])

    def _writing(self, kind: str) -> None:
        self._dirty.add(kind)
        self._files.written()

    def verify_files(self) -> list[str] | None:
        return self._files.verify()

    def flush(self) -> None:
        """Make what was written durable. Only the shards written since their last flush: a flush holds the
        interpreter lock for its whole length (10-200 ms on a busy disk, edge_pages)."""
        for kind in [k for k in self._shards if k in self._dirty]:
            with self._engine(kind):
                self._shards[kind].flush()
            self._dirty.discard(kind)

    def optimize(self, *, hnsw: bool = True) -> None:
        """The chunks' segments rewritten to open at once (`edge_layout`), with HNSW when `hnsw`; in a child process
        when it may be long (a new layout, ASIDE_FROM chunks written), else here (0.01 s after 20 chunks)."""
        if not self.exists("chunks") or (dim := self.dim()) is None:
            return
        # optimising rewrites segments beside the old ones: up to the collection's size again. Without HNSW it
        # only makes the index open faster: on a disk without the room for it, the index stays as written
        try:
            self._space.check(need=used_bytes(self.path("chunks")), what="optimisation of the chunks")
        except DataWriteError as exc:
            if hnsw:
                raise
            log.warning("the chunks are left as written (they open slower): %s", exc)
            return
        target = layout_name(hnsw)
        reload = self._meta.get(self.prefix).get(LAYOUT_KEY) != target
        with self._engine("chunks"):
            self._files.written()       # the rewrite changes the files; recorded again once it is done
            if not reload and self._written < ASIDE_FROM:
                shard = self._shard("chunks")
                shard.optimize()
                shard.flush()
                self._files.committed()
                return
            shard = self._shards.pop("chunks", None)
            if shard is not None:
                shard.flush()
                shard.close()
            self._dirty.discard("chunks")
            try:
                settle_aside(self.path("chunks"), dim, DENSE, SPARSE, hnsw=hnsw, reload=reload)
            except SettleFailed as exc:
                raise StoreError(f"{self.path('chunks')}: rewriting the chunks collection failed ({exc}); the "
                                 f"index answers as before; `mindnet ingest` tries again when it writes") from exc
            self._written = 0
        if reload:
            self._meta.update(self.prefix, **{LAYOUT_KEY: target})
        self._files.committed()         # the same points, rewritten: `check` may trust the files again

    # ------------------------------------------------------------------ reading

    def retrieve(self, kind: str, ids: Sequence[str], *, payload: Fields = True, dense: bool = False,
                 sparse: bool = False) -> list[Record]:
        if not ids:
            return []
        wanted, out = bool(vector_names(dense, sparse)), []
        for page in pages(ids):
            with self._engine(kind):
                points = self._shard(kind).retrieve([uuid.UUID(i) for i in page], payload_selector(payload),
                                                    vector_names(dense, sparse))
                out += [to_record(p, payload=payload, vectors=wanted) for p in points]
        return out

    def scroll(self, kind: str, where: Where | None = None, *, payload: Fields = True, dense: bool = False,
               sparse: bool = False, page: int | None = None) -> Iterator[Record]:
        shard = self._shard(kind)
        flt, selector, vectors = edge_filter(where), payload_selector(payload), vector_names(dense, sparse)
        offset, limit = None, page or SCROLL_PAGE
        while True:
            with self._engine(kind):
                points, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=limit, filter=flt,
                                                               with_payload=selector, with_vector=vectors))
            for p in points:
                yield to_record(p, payload=payload, vectors=bool(vectors))
            if offset is None:
                return

    def count(self, kind: str, where: Where | None = None) -> int:
        with self._engine(kind):
            return self._shard(kind).count(qe.CountRequest(filter=edge_filter(where), exact=True))

    def facet(self, kind: str, key: str) -> dict[Any, int] | None:
        with self._engine(kind):
            shard = self._shard(kind)
            if key not in shard.info().payload_schema:
                return None         # without a payload index the engine reads every payload
            return convert.facet_counts(shard, key, shard.count(qe.CountRequest(exact=True)) + 1)

    def search_dense(self, vector: Sequence[float], limit: int, where: Where | None = None, *,
                     payload: Fields = False, dense: bool = False, params: SearchParams | None = None
                     ) -> list[Record]:
        params = params or SearchParams()
        request = qe.QueryRequest(query=qe.Query.Nearest(list(map(float, vector)), using=DENSE), limit=limit,
                                  filter=edge_filter(where), with_payload=payload_selector(payload),
                                  with_vector=vector_names(dense, False),
                                  params=qe.SearchParams(exact=params.exact, hnsw_ef=params.hnsw_ef))
        with self._engine("chunks"):
            return convert.hits(self._shard("chunks").query(request), payload=payload, vectors=dense)

    def search_sparse(self, vector: Sparse, limit: int, where: Where | None = None, *,
                      payload: Fields = False, dense: bool = False) -> list[Record]:
        if not vector.indices:
            return []
        request = qe.QueryRequest(query=qe.Query.Nearest(qe.SparseVector(list(vector.indices), list(vector.values)),
                                                         using=SPARSE),
                                  limit=limit, filter=edge_filter(where), with_payload=payload_selector(payload),
                                  with_vector=vector_names(dense, False))
        with self._engine("chunks"):
            return convert.hits([p for p in self._shard("chunks").query(request) if p.score > 0], payload=payload,
                                vectors=dense)

    # ------------------------------------------------------------------ token, info, close

    def read_token(self) -> str | None:
        token = self._meta.get(self.prefix).get("token")
        return token if isinstance(token, str) and token else None

    def write_token(self, token: str | None) -> bool:
        if token is not None:
            self.flush()    # the token vouches for what was written: make it durable first
        # clearing it vouches for nothing (the next import reads the whole vault): no flush, which held the
        # interpreter lock 100-200 ms at the start of every live import (drill, hostile notes)
        self._meta.update(self.prefix, token=token or None)
        if token is not None:
            self._files.committed()
        return True

    def read_vault(self) -> str | None:
        vault = self._meta.get(self.prefix).get("vault")
        return vault if isinstance(vault, str) and vault else None

    def write_vault(self, vault: str) -> None:
        if self.read_vault() != vault:
            self._meta.update(self.prefix, vault=vault)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for shard in self._shards.values():
                shard.close()
            self._shards.clear()
            self._files.closed()
        finally:
            self._shards.clear()
            if self._claim is not None:
                self._claim.release()
