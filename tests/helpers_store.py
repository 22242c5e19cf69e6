"""Reading an index in tests: payloads of a collection, by kind ("notes", "chunks", "edges")."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mindnet.store.engine import Store


def payloads(store: Store, kind: str, fields: Sequence[str] | None = None) -> Iterator[dict]:
    """Every payload of the collection (only `fields` when given); nothing when it does not exist."""
    if store.exists(kind):
        for r in store.scroll(kind, payload=list(fields) if fields else True):
            yield r.payload
