"""mindnet's HTTP API (FastAPI): /health, /query, /ingest - and, mounted beside it, the Chainlit chat.

Handlers translate requests into calls on the `Mindnet` service and its errors into HTTP answers; no logic
of their own. `create_app()` is the factory `mindnet serve` runs; other routers (chat, feedback, the UI)
attach to the same app.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from mindnet.chat.engine import ChatEvent, ChatRequest, ChatResponse
from mindnet.errors import (
    ConfigError,
    DimensionMismatchError,
    DraftConflictError,
    DraftError,
    EmptyIndexError,
    ImportRunningError,
    LLMUnavailableError,
    MindnetError,
    QueryError,
    StoreLockedError,
)
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet
from mindnet.store.collections import names

log = logging.getLogger(__name__)

STATUS_OF: dict[type[MindnetError], int] = {
    QueryError: 422, ConfigError: 500, StoreLockedError: 503, DimensionMismatchError: 409, LLMUnavailableError: 503,
    EmptyIndexError: 409, ImportRunningError: 409,
}


def _status(exc: MindnetError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 500


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    full: bool = False


def vault_note(vault_root: Path, path: str) -> str | None:
    """`path` as a vault-relative POSIX path when it names a Markdown file inside the vault, else None."""
    if not path or "\x00" in path or not path.endswith(".md"):
        return None
    root = Path(vault_root).resolve()
    try:
        target = (root / path).resolve()
        rel = target.relative_to(root)
    except (ValueError, OSError):
        return None
    return rel.as_posix() if target.is_file() else None


def obsidian_uri(vault_root: Path, path: str) -> str:
    return f"obsidian://open?vault={quote(Path(vault_root).name, safe='')}&file={quote(path, safe='')}"


def create_app(mindnet: Mindnet | None = None, *, ui: bool = False) -> FastAPI:
    """The HTTP API; with `ui`, the Chainlit chat is mounted at /ui (once per process) and / redirects there."""
    app = FastAPI(title="mindnet", description="Graph-aware retrieval and chat over a Markdown vault")
    app.state.mindnet = mindnet or Mindnet.from_env()

    @app.exception_handler(MindnetError)
    async def _mindnet_error(_: Request, exc: MindnetError) -> JSONResponse:
        body: dict[str, Any] = {"error": type(exc).__name__, "detail": str(exc)}
        if isinstance(exc, QueryError) and exc.field:
            body["field"] = exc.field
        return JSONResponse(status_code=_status(exc), content=body)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        def field(e: dict) -> str:   # a JSON syntax error's location is a byte offset, not a field
            return "body" if e["type"] == "json_invalid" else ".".join(str(p) for p in e["loc"] if p != "body")

        errors = [{"field": field(e), "message": e["msg"]} for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse(status_code=422, content={"error": "invalid request", "detail": detail,
                                                      "errors": errors})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        m: Mindnet = app.state.mindnet

        def count() -> dict[str, int]:   # the local client is shared with a running import: take turns
            with m.index_lock:
                return {kind: (m.client.count(name).count if m.client.collection_exists(name) else 0)
                        for kind, name in names(m.settings.collection_prefix).items()}

        counts = await asyncio.to_thread(count)
        body = {"status": "ok", "collections": counts, "embedding": m.settings.embedding,
                "vault": str(m.settings.vault_root)}
        # the running (or last) import: phase, notes, texts embedded / total, texts/s, ETA (mindnet.indexing.progress)
        body["import"] = m.progress.as_dict()
        if m.live is not None:   # the live index: watcher state and the last re-import (mindnet.live)
            body["live"] = m.live.status()
        return body

    @app.post("/query")
    async def query(request: QueryRequest) -> dict[str, Any]:
        return await app.state.mindnet.aquery(request)

    @app.post("/ingest")
    async def ingest(request: IngestRequest | None = None) -> dict[str, Any]:
        report = await app.state.mindnet.aingest(full=bool(request and request.full))
        return report.as_dict()

    @app.get("/open", include_in_schema=False)
    async def open_note(path: str = "") -> Any:
        """Open a note of the vault in Obsidian: a 307 to its obsidian:// URL (the chat links here because
        Markdown renderers drop links with the obsidian: scheme)."""
        target = vault_note(app.state.mindnet.settings.vault_root, path)
        if target is None:
            return JSONResponse(status_code=404, content={
                "error": "not found", "detail": f"path {path[:200]!r} is not a note of the vault; "
                                                "pass a vault-relative path like 'concepts/qdrant.md'"})
        return RedirectResponse(obsidian_uri(app.state.mindnet.settings.vault_root, target), status_code=307)

    _add_chat_routes(app)
    if ui:
        from mindnet.ui.mount import mount_ui
        mount_ui(app, app.state.mindnet, path="/ui")
    return app


# --------------------------------------------------------------------------- chat, feedback, drafts


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query_id: str = Field(max_length=100)
    node_id: str = Field("generated_answer", max_length=300)
    score: StrictInt                                   # true/1.0 are not scores
    comment: str | None = Field(None, max_length=4000)


class DraftRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    markdown: str
    note_type: str
    overwrite: bool = False


def _add_chat_routes(app: FastAPI) -> None:
    @app.post("/chat")
    async def chat(request: ChatRequest) -> ChatResponse:
        return await app.state.mindnet.chat.achat(request)

    @app.post("/chat/stream")
    async def chat_stream(request: ChatRequest) -> StreamingResponse:
        engine = app.state.mindnet.chat
        await engine.aroute(request)  # an invalid strategy override is a 422 before streaming starts

        async def lines() -> AsyncIterator[str]:
            try:
                async for event in engine.astream(request):
                    yield event.model_dump_json() + "\n"
            except MindnetError as exc:
                log.warning("chat stream failed: %s", exc)
                yield ChatEvent(kind="error", data={"message": str(exc)}).model_dump_json() + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.post("/feedback")
    async def feedback(request: FeedbackRequest) -> dict[str, Any]:
        record = app.state.mindnet.logs.record_feedback(request.query_id, request.score, node_id=request.node_id,
                                                        comment=request.comment)
        return record.model_dump(mode="json")

    @app.post("/drafts")
    async def drafts(request: DraftRequest) -> Any:
        try:
            return await app.state.mindnet.asave_draft(request.markdown, request.note_type,
                                                      overwrite=request.overwrite)
        except DraftError as exc:
            status = 409 if isinstance(exc, DraftConflictError) else 422
            return JSONResponse(status_code=status, content={"error": "DraftError", "detail": str(exc),
                                                             "path": exc.path})

