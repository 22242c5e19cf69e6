"""`ServerStore`: a Qdrant server or cluster through qdrant-client (MINDNET_QDRANT_URL), for users who outgrow
one machine.

The same collections, vector names (llama-index-vector-stores-qdrant's defaults), payloads and payload indexes
as the embedded engine; new collections get the configured shard number and replication factor. The import
token lives in the notes collection's metadata. Any `QdrantClient` works here, which is how the tests run this
code path without a server: over qdrant-client's in-memory mode (the same API).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.errors import StoreError
from mindnet.store.collections import (
    DENSE,
    PAYLOAD_INDEXES,
    SPARSE,
    CollectionLayout,
    dimension_error,
    names,
    vector_names,
)
from mindnet.store.engine import KINDS, Fields, Point, Record, SearchParams, Sparse, Store, Where

log = logging.getLogger(__name__)
PAGE = 2000
TOKEN_KEY = "mindnet_manifest"
VAULT_KEY = "mindnet_vault"
SCHEMAS = {"keyword": qm.PayloadSchemaType.KEYWORD, "bool": qm.PayloadSchemaType.BOOL}


def server_filter(where: Where | None) -> qm.Filter | None:
    """mindnet's `Where` as a qdrant-client filter."""
    if where is None or where.empty:
        return None
    must: list[Any] = [_field(k, v) for k, v in where.match]
    if where.ids is not None:
        must.append(qm.HasIdCondition(has_id=list(where.ids)))
    must_not: list[Any] = [_field(k, v) for k, v in where.exclude]
    if where.without:
        must_not.append(qm.HasVectorCondition(has_vector=where.without))
    must_not += [qm.IsEmptyCondition(is_empty=qm.PayloadField(key=key)) for key in where.present]
    return qm.Filter(must=must or None, must_not=must_not or None)


def _field(key: str, values: tuple[Any, ...]) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values)))


def _selector(payload: Fields) -> bool | qm.PayloadSelectorInclude:
    return payload if isinstance(payload, bool) else qm.PayloadSelectorInclude(include=list(payload))


def _record(point: Any, score: float = 0.0) -> Record:
    vec = point.vector if isinstance(point.vector, dict) else {}
    dense = vec.get(DENSE)
    sparse = vec.get(SPARSE)
    if dense is not None:       # qdrant-client's in-memory mode returns them as stored; a server normalised
        dense = np.asarray(dense, dtype=np.float32)
        norm = float(np.linalg.norm(dense))
        dense = dense / norm if norm else dense
    return Record(id=str(point.id), payload=point.payload or {}, dense=dense,
                  sparse=Sparse(list(sparse.indices), list(sparse.values)) if sparse is not None else None,
                  score=score)


def _point(p: Point) -> qm.PointStruct:
    vector: dict[str, Any] = {}
    if p.dense is not None:
        vector[DENSE] = list(p.dense)
    if p.sparse is not None:
        vector[SPARSE] = qm.SparseVector(indices=list(p.sparse.indices), values=list(p.sparse.values))
    return qm.PointStruct(id=p.id, vector=vector, payload=p.payload)


class ServerStore(Store):
    """The three collections of `prefix` on the server behind `client`."""

    def __init__(self, client: QdrantClient, prefix: str = "mindnet", *, layout: CollectionLayout | None = None,
                 location: str = "") -> None:
        self.client = client
        self.prefix = prefix
        self.layout = layout or CollectionLayout()
        self.location = location or "a Qdrant server"
        self._names = names(prefix)

    @classmethod
    def connect(cls, url: str, prefix: str = "mindnet", *, api_key: str | None = None,
                layout: CollectionLayout | None = None) -> ServerStore:
        try:
            client = QdrantClient(url=url, api_key=api_key, timeout=30)
        except Exception as exc:  # noqa: BLE001 - the client validates the URL eagerly, with varied errors
            raise StoreError(f"MINDNET_QDRANT_URL={url!r}: cannot create a client: {exc}") from exc
        return cls(client, prefix, layout=layout, location=url)

    # ------------------------------------------------------------------ collections

    def exists(self, kind: str) -> bool:
        return self.client.collection_exists(self._names[kind])

    def create(self, dim: int) -> None:
        existing = self.dim()
        if existing is not None and existing != dim:
            raise dimension_error(self.prefix, existing, dim)
        spread = self.layout.create_args()
        if existing is None:
            self.client.create_collection(
                self._names["chunks"], vectors_config={DENSE: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)},
                sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}, **spread)
        for kind in ("notes", "edges"):
            if not self.exists(kind):
                self.client.create_collection(self._names[kind], vectors_config={}, **spread)
        for kind, fields in PAYLOAD_INDEXES.items():
            have = self.client.get_collection(self._names[kind]).payload_schema or {}
            for name, schema in fields.items():
                if name not in have:
                    self.client.create_payload_index(self._names[kind], field_name=name, field_schema=SCHEMAS[schema])

    def missing_indexes(self) -> list[str]:
        """Payload indexes a filter needs that the server does not have (`mindnet check`). qdrant-client's
        in-memory or folder mode (tests) keeps none and needs none."""
        if self.client.init_options.get("location") == ":memory:" or self.client.init_options.get("path"):
            return []
        out = []
        for kind, fields in PAYLOAD_INDEXES.items():
            if self.exists(kind):
                have = self.client.get_collection(self._names[kind]).payload_schema or {}
                out += [f"{self._names[kind]}.{f}" for f in fields if f not in have]
        return out

    def dim(self) -> int | None:
        if not self.exists("chunks"):
            return None
        vectors = self.client.get_collection(self._names["chunks"]).config.params.vectors
        params = vectors.get(DENSE) if isinstance(vectors, dict) else vectors
        return params.size if params else None

    def drop(self) -> None:
        for kind in KINDS:
            if self.exists(kind):
                self.client.delete_collection(self._names[kind])

    # ------------------------------------------------------------------ writing

    def upsert(self, kind: str, points: Sequence[Point]) -> None:
        if points:
            self.client.upsert(self._names[kind], points=[_point(p) for p in points])

    def set_dense(self, kind: str, vectors: dict[str, list[float]]) -> None:
        if vectors:
            self.client.update_vectors(self._names[kind], points=[
                qm.PointVectors(id=pid, vector={DENSE: list(v)}) for pid, v in vectors.items()])

    def delete(self, kind: str, ids: Sequence[str]) -> None:
        if ids:
            self.client.delete(self._names[kind], points_selector=qm.PointIdsList(points=list(ids)))

    def delete_where(self, kind: str, where: Where) -> None:
        self.client.delete(self._names[kind], points_selector=qm.FilterSelector(filter=server_filter(where)))

    # ------------------------------------------------------------------ reading

    def retrieve(self, kind: str, ids: Sequence[str], *, payload: Fields = True, dense: bool = False,
                 sparse: bool = False) -> list[Record]:
        if not ids:
            return []
        points = self.client.retrieve(self._names[kind], ids=list(ids), with_payload=_selector(payload),
                                      with_vectors=vector_names(dense, sparse))
        return [_record(p) for p in points]

    def scroll(self, kind: str, where: Where | None = None, *, payload: Fields = True, dense: bool = False,
               sparse: bool = False, page: int | None = None) -> Iterator[Record]:
        flt, selector, vectors = server_filter(where), _selector(payload), vector_names(dense, sparse)
        offset = None
        while True:
            points, offset = self.client.scroll(self._names[kind], scroll_filter=flt, limit=page or PAGE, offset=offset,
                                                with_payload=selector, with_vectors=vectors)
            for p in points:
                yield _record(p)
            if offset is None:
                return

    def count(self, kind: str, where: Where | None = None) -> int:
        return self.client.count(self._names[kind], count_filter=server_filter(where), exact=True).count

    def search_dense(self, vector: Sequence[float], limit: int, where: Where | None = None, *,
                     payload: Fields = False, dense: bool = False, params: SearchParams | None = None
                     ) -> list[Record]:
        params = params or SearchParams()
        hits = self.client.query_points(self._names["chunks"], query=list(map(float, vector)), using=DENSE,
                                        query_filter=server_filter(where), limit=limit,
                                        with_payload=_selector(payload), with_vectors=vector_names(dense, False),
                                        search_params=qm.SearchParams(exact=params.exact, hnsw_ef=params.hnsw_ef))
        return [_record(p, p.score) for p in hits.points]

    def search_sparse(self, vector: Sparse, limit: int, where: Where | None = None, *,
                      payload: Fields = False, dense: bool = False) -> list[Record]:
        if not vector.indices:
            return []
        hits = self.client.query_points(self._names["chunks"], using=SPARSE, limit=limit,
                                        query=qm.SparseVector(indices=list(vector.indices), values=list(vector.values)),
                                        query_filter=server_filter(where), with_payload=_selector(payload),
                                        with_vectors=vector_names(dense, False))
        return [_record(p, p.score) for p in hits.points if p.score > 0]

    # ------------------------------------------------------------------ token, info, close

    def read_token(self) -> str | None:
        try:
            if not self.exists("notes"):
                return None
            metadata = self.client.get_collection(self._names["notes"]).config.metadata or {}
        except Exception as exc:  # noqa: BLE001 - a server without collection metadata: no manifest, full plans
            log.info("cannot read the import token of %s: %s", self._names["notes"], exc)
            return None
        token = metadata.get(TOKEN_KEY)
        return token if isinstance(token, str) and token else None

    def write_token(self, token: str | None) -> bool:
        try:
            self.client.update_collection(self._names["notes"], metadata={TOKEN_KEY: token or ""})
            return True
        except Exception as exc:  # noqa: BLE001 - see read_token
            log.info("cannot write the import token of %s: %s", self._names["notes"], exc)
            return False

    def read_vault(self) -> str | None:
        try:
            if not self.exists("notes"):
                return None
            metadata = self.client.get_collection(self._names["notes"]).config.metadata or {}
        except Exception as exc:  # noqa: BLE001 - see read_token
            log.info("cannot read the vault of %s: %s", self._names["notes"], exc)
            return None
        vault = metadata.get(VAULT_KEY)
        return vault if isinstance(vault, str) and vault else None

    def write_vault(self, vault: str) -> None:
        if self.read_vault() == vault:
            return
        try:
            metadata = dict(self.client.get_collection(self._names["notes"]).config.metadata or {})
            self.client.update_collection(self._names["notes"], metadata={**metadata, VAULT_KEY: vault})
        except Exception as exc:  # noqa: BLE001 - see read_token
            log.info("cannot write the vault of %s: %s", self._names["notes"], exc)

    def close(self) -> None:
        self.client.close()
