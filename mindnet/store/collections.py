"""Collection names, schemas and point ids of the three mindnet collections, the same on both engines.

    <prefix>_notes   one point per note (payload only)
    <prefix>_chunks  one point per chunk: dense vector `text-dense` + sparse BM25 vector `text-sparse-new`
    <prefix>_edges   one point per edge (payload only)

Vector names are llama-index-vector-stores-qdrant's defaults, so a plain `QdrantVectorStore` over a server's
chunks collection (with or without hybrid) works for other pipelines.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import PurePosixPath

from mindnet.errors import DimensionMismatchError
from mindnet.store.engine import Where

DENSE = "text-dense"
SPARSE = "text-sparse-new"
POINT_NAMESPACE = uuid.UUID("0c3f7e0a-4a0e-4a5e-8f8e-6a2b1f1d9c42")

# payload indexes: every field a filter names (Qdrant filters over indexes on both engines)
PAYLOAD_INDEXES: dict[str, dict[str, str]] = {
    "notes": {"note_id": "keyword", "type": "keyword", "tags": "keyword", "path": "keyword"},
    "chunks": {"note_id": "keyword", "chunk_id": "keyword", "type": "keyword", "tags": "keyword",
               "path": "keyword", "folders": "keyword"},
    "edges": {"source_id": "keyword", "target_id": "keyword", "kind": "keyword", "kinds": "keyword",
              "scope": "keyword", "note_id": "keyword", "resolved": "bool"},
}
# keyword indexes no search needs: `mindnet check` finds the edges to a section by a facet of this one (on Qdrant
# Edge shards: made with them, or added to an older shard by its next import that writes; until then check
# filters those edges in the engine, which reads every edge's payload)
CHECK_INDEXES: dict[str, dict[str, str]] = {"edges": {"target_chunk": "keyword"}}
# indexes an Edge shard leaves out: nothing mindnet runs filters or counts by these two, and writing the 30,000-note
# bench vault's 664,233 edges with them took 66.0 s and 1,111 MB of the engine's memory, without 55.1 s and 905 MB
# (a server keeps them: the seed's schema, for other tools' queries). An older shard loses them at its next write
LEFT_OUT: dict[str, set[str]] = {"edges": {"kinds", "scope"}}
SHARD_INDEXES = {kind: {f: s for f, s in (fields | CHECK_INDEXES.get(kind, {})).items()
                        if f not in LEFT_OUT.get(kind, ())} for kind, fields in PAYLOAD_INDEXES.items()}
# the chunk fields ranking needs: a search reads these for its candidates and the whole payload only for the
# hits it shows (a chunk's payload holds its text twice, as `text` and in LlamaIndex's node JSON)
BRIEF_FIELDS = ["chunk_id", "note_id", "type", "path", "tags", "retriever_weight", "lang", "title"]


def names(prefix: str) -> dict[str, str]:
    return {"notes": f"{prefix}_notes", "chunks": f"{prefix}_chunks", "edges": f"{prefix}_edges"}


def point_id(key: str) -> str:
    """Qdrant point ids must be UUIDs (or integers): derive one from a chunk id, note id or edge id."""
    return str(uuid.uuid5(POINT_NAMESPACE, key))


def folders_of(path: str) -> list[str]:
    """The vault folders a note lies in, outermost first ("a/b/n.md" -> ["a", "a/b"]): a keyword field, so a
    folder filter is a plain match on both engines (Qdrant has no prefix match on keywords)."""
    parts = PurePosixPath(path).parts[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


# chunks whose dense vector is not there yet (phase 1 of an import wrote them, phase 2 embeds them)
WITHOUT_DENSE = Where(without=DENSE)


def vector_names(dense: bool, sparse: bool) -> list[str] | bool:
    """The vectors a read asks for (False: none)."""
    return [name for name, on in ((DENSE, dense), (SPARSE, sparse)) if on] or False


def dimension_error(prefix: str, existing: int, dim: int) -> DimensionMismatchError:
    return DimensionMismatchError(
        f"collection {prefix}_chunks holds {existing}-d vectors but the embedding model gives {dim}-d; the "
        f"embedding model changed: run `mindnet ingest --full` to rebuild the index")


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


@dataclass(frozen=True)
class CollectionLayout:
    """How a Qdrant server spreads a new collection: `shard_number` shards, each kept `replication_factor`
    times (distributed mode). None leaves Qdrant's default (1); the embedded engine is one shard per collection
    and ignores both. Applies to all three collections when they are created; an existing one keeps its layout."""

    shard_number: int | None = None
    replication_factor: int | None = None

    @classmethod
    def from_settings(cls, settings) -> CollectionLayout:   # noqa: ANN001 - mindnet.settings.Settings
        return cls(settings.qdrant_shard_number, settings.qdrant_replication_factor)

    def create_args(self) -> dict[str, int]:
        return {k: v for k, v in (("shard_number", self.shard_number),
                                  ("replication_factor", self.replication_factor)) if v is not None}
