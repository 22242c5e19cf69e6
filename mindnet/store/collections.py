"""Collection names, schemas and point ids of the three mindnet collections.

    <prefix>_notes   one point per note (payload only)
    <prefix>_chunks  one point per chunk: dense vector `text-dense` + sparse BM25 vector `text-sparse-new`
    <prefix>_edges   one point per edge (payload only)

Vector names are llama-index-vector-stores-qdrant's defaults, so a plain `QdrantVectorStore` over the chunks
collection (with or without hybrid) works for other pipelines.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from mindnet.errors import DimensionMismatchError
from mindnet.store.client import is_local

DENSE = "text-dense"
SPARSE = "text-sparse-new"
POINT_NAMESPACE = uuid.UUID("0c3f7e0a-4a0e-4a5e-8f8e-6a2b1f1d9c42")

PAYLOAD_INDEXES: dict[str, dict[str, qm.PayloadSchemaType]] = {
    "notes": {"note_id": qm.PayloadSchemaType.KEYWORD, "type": qm.PayloadSchemaType.KEYWORD,
              "tags": qm.PayloadSchemaType.KEYWORD},
    "chunks": {"note_id": qm.PayloadSchemaType.KEYWORD, "chunk_id": qm.PayloadSchemaType.KEYWORD,
               "type": qm.PayloadSchemaType.KEYWORD, "tags": qm.PayloadSchemaType.KEYWORD,
               "path": qm.PayloadSchemaType.KEYWORD},
    "edges": {"source_id": qm.PayloadSchemaType.KEYWORD, "target_id": qm.PayloadSchemaType.KEYWORD,
              "kind": qm.PayloadSchemaType.KEYWORD, "kinds": qm.PayloadSchemaType.KEYWORD,
              "scope": qm.PayloadSchemaType.KEYWORD, "note_id": qm.PayloadSchemaType.KEYWORD,
              "resolved": qm.PayloadSchemaType.BOOL},
}


def edge_kinds(payload: dict) -> list[str]:
    """Every kind an edge payload stands for: `kinds` (its own kind plus the type default kinds merged onto an
    explicit link), or `kind` alone for an edge written before defaults were merged."""
    return payload.get("kinds") or [payload["kind"]]


def kind_label(payload: dict) -> str:
    """An edge's kinds as one label ("references+related_to"; kind names never hold '+'), for arrays of kinds."""
    return "+".join(edge_kinds(payload))


def label_kinds(label: str) -> list[str]:
    return label.split("+")


def edge_as(payload: dict, wanted: set[str] | frozenset[str]) -> dict | None:
    """The edge as one of the `wanted` kinds, or None: itself when its own kind is wanted, else (matched by a
    merged default kind only) a copy shown as that kind with the default's rule and confidence, exactly as
    the separate default edge was before."""
    if payload["kind"] in wanted:
        return payload
    for kind in edge_kinds(payload)[1:]:
        if kind in wanted:
            return {**payload, "kind": kind, "rule_id": payload.get("default_rule") or payload["rule_id"],
                    "confidence": payload.get("default_confidence", payload["confidence"])}
    return None


def kind_filter(kinds: list[str]) -> qm.Filter:
    """Edges that stand for any of `kinds` on a Qdrant server (payload index on `kind` and `kinds`)."""
    return qm.Filter(should=[qm.FieldCondition(key="kind", match=qm.MatchAny(any=kinds)),
                             qm.FieldCondition(key="kinds", match=qm.MatchAny(any=kinds))])


# chunks whose dense vector is not there yet (phase 1 of an import wrote them, phase 2 embeds them)
WITHOUT_DENSE = qm.Filter(must_not=[qm.HasVectorCondition(has_vector=DENSE)])


def count_without_vector(client: QdrantClient, prefix: str) -> int:
    name = names(prefix)["chunks"]
    if not client.collection_exists(name):
        return 0
    return client.count(name, count_filter=WITHOUT_DENSE, exact=True).count


def names(prefix: str) -> dict[str, str]:
    return {"notes": f"{prefix}_notes", "chunks": f"{prefix}_chunks", "edges": f"{prefix}_edges"}


def point_id(key: str) -> str:
    """Qdrant point ids must be UUIDs: derive one from a chunk id, note id or edge id."""
    return str(uuid.uuid5(POINT_NAMESPACE, key))


def chunks_dim(client: QdrantClient, prefix: str) -> int | None:
    name = names(prefix)["chunks"]
    if not client.collection_exists(name):
        return None
    vectors = client.get_collection(name).config.params.vectors
    params = vectors.get(DENSE) if isinstance(vectors, dict) else vectors
    return params.size if params else None


@dataclass(frozen=True)
class CollectionLayout:
    """How a Qdrant server spreads a new collection: `shard_number` shards, each kept `replication_factor`
    times (distributed mode). None leaves Qdrant's default (1); local mode has neither and ignores both.
    Applies to all three collections when they are created; an existing collection keeps its layout."""

    shard_number: int | None = None
    replication_factor: int | None = None

    @classmethod
    def from_settings(cls, settings) -> CollectionLayout:   # noqa: ANN001 - mindnet.settings.Settings
        return cls(settings.qdrant_shard_number, settings.qdrant_replication_factor)

    def create_args(self) -> dict[str, int]:
        return {k: v for k, v in (("shard_number", self.shard_number),
                                  ("replication_factor", self.replication_factor)) if v is not None}


def ensure_collections(client: QdrantClient, prefix: str, dim: int, layout: CollectionLayout | None = None) -> None:
    """Create missing collections (with `layout`'s shards and replicas on a server); refuse a chunks collection
    built for another embedding dimension."""
    coll = names(prefix)
    spread = (layout or CollectionLayout()).create_args() if not is_local(client) else {}
    existing = chunks_dim(client, prefix)
    if existing is not None and existing != dim:
        raise DimensionMismatchError(
            f"collection {coll['chunks']} holds {existing}-d vectors but the embedding model gives {dim}-d; "
            f"the embedding model changed: run `mindnet ingest --full` to rebuild the index")
    if existing is None:
        client.create_collection(
            coll["chunks"], vectors_config={DENSE: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}, **spread)
    for kind in ("notes", "edges"):
        if not client.collection_exists(coll[kind]):
            client.create_collection(coll[kind], vectors_config={}, **spread)
    if not is_local(client):  # payload indexes only exist on a Qdrant server (local mode ignores them)
        for kind, fields in PAYLOAD_INDEXES.items():
            have = client.get_collection(coll[kind]).payload_schema or {}
            for field, schema in fields.items():
                if field not in have:
                    client.create_payload_index(coll[kind], field_name=field, field_schema=schema)


def missing_payload_indexes(client: QdrantClient, prefix: str) -> list[str]:
    if is_local(client):
        return []
    out = []
    for kind, fields in PAYLOAD_INDEXES.items():
        name = names(prefix)[kind]
        if not client.collection_exists(name):
            continue
        have = client.get_collection(name).payload_schema or {}
        out += [f"{name}.{f}" for f in fields if f not in have]
    return out


def drop_all(client: QdrantClient, prefix: str) -> None:
    for name in names(prefix).values():
        if client.collection_exists(name):
            client.delete_collection(name)


def tune_local_storage(client: QdrantClient, prefix: str) -> int:
    """Local mode commits (and fsyncs) its SQLite file once per point: 7,500 points took ~50 s of an import.
    WAL journal with synchronous=NORMAL makes a commit cheap and keeps the file consistent after a crash (the
    last commits may be lost, which the import tolerates: a note's record is written last and carries its
    fingerprint, so the next run redoes what is missing). Returns how many collections were tuned."""
    if not is_local(client):
        return 0
    tuned = 0
    local_collections = getattr(client._client, "collections", {})   # QdrantLocal internals, guarded
    for name in names(prefix).values():
        storage = getattr(local_collections.get(name), "storage", None)
        connection = getattr(storage, "storage", None)
        if connection is None:     # in-memory client, or a qdrant-client that stores differently
            continue
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        tuned += 1
    return tuned


def scroll_points(client: QdrantClient, collection: str, *, scroll_filter: qm.Filter | None = None,
                  fields: list[str] | None = None, vectors: list[str] | bool = False,
                  page: int = 2000) -> Iterator[qm.Record]:
    """Every point of a collection (matching the filter), page by page; `fields` limits the payload."""
    payload: qm.PayloadSelectorInclude | bool = qm.PayloadSelectorInclude(include=fields) if fields else True
    if is_local(client):
        # local mode sorts every id and evaluates the filter on every point for each page: paging is
        # quadratic (300k edges in pages of 2,000: 150 full passes), one page is one pass
        page = max(page, client.count(collection, exact=True).count + 1)
    offset = None
    while True:
        points, offset = client.scroll(collection, scroll_filter=scroll_filter, limit=page, offset=offset,
                                       with_payload=payload, with_vectors=vectors)
        yield from points
        if offset is None:
            return
