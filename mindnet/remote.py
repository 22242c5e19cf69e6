"""A command line search while a `mindnet serve` holds the embedded index: the search is asked of that server.

An embedded index has one process holding it. The server says in the index folder's holder file where it
serves (`store.folder.serving_at`), so `mindnet query` sends its request to the server's `/query` instead of
refusing with "in use". It is also the fast way: the server has the model loaded and the index open, and this
process imports neither LlamaIndex nor the embedding model (standard library HTTP only).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mindnet.errors import QueryError, StoreError
from mindnet.settings import Settings
from mindnet.store.folder import holder_url

TIMEOUT_S = 120.0     # a search waits for an import's write step at most; the server answers in milliseconds


def serving_url(settings: Settings) -> str | None:
    """The URL of the `mindnet serve` holding the embedded index `settings` name, else None (no server holds
    it, or the index is a Qdrant server, which any number of processes can open)."""
    if settings.qdrant_url or str(settings.qdrant_path) == ":memory:":
        return None
    return holder_url(Path(settings.qdrant_path))


def remote_query(url: str, request: dict[str, Any], *, token: str | None = None,
                 timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """POST `request` (a `QueryRequest` as JSON) to the server's `/query`; its answer, as `Mindnet.query` gives
    it. The server's refusals (400, 503 ...) become a `QueryError` with its own words; a server that does not
    answer is a `StoreError` that names it."""
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    post = urllib.request.Request(f"{url}/query", data=json.dumps(request).encode(), headers=headers,
                                  method="POST")
    try:
        with urllib.request.urlopen(post, timeout=timeout) as answer:    # noqa: S310 - the holder's own URL
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise QueryError(f"the server at {url} refused the search ({exc.code}): {_detail(exc)}") from None
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StoreError(f"the index is held by the server at {url}, which did not answer the search: {reason}. "
                         f"Is that `mindnet serve` still starting or stuck? Stop it to search the index "
                         f"directly") from None


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except (OSError, ValueError):
        return exc.reason
    if not isinstance(body, dict):
        return exc.reason
    detail = body.get("detail") or body.get("error") or exc.reason
    return detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
