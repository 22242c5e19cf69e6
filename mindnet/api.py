"""mindnet's HTTP API (FastAPI): /health, /query, /ingest - and, mounted beside it, the Chainlit chat.

Handlers translate requests into calls on the `Mindnet` service and its errors into HTTP answers; no logic
of their own. `create_app()` is the factory `mindnet serve` runs; other routers (chat, feedback, the UI)
attach to the same app.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from mindnet.errors import (ConfigError, DimensionMismatchError, LLMUnavailableError, MindnetError, QueryError,
                            StoreLockedError)
from mindnet.retrieval.query import QueryRequest
from mindnet.service import Mindnet

log = logging.getLogger(__name__)

STATUS_OF: dict[type[MindnetError], int] = {
    QueryError: 422, ConfigError: 500, StoreLockedError: 503, DimensionMismatchError: 409, LLMUnavailableError: 503,
}


def _status(exc: MindnetError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 500


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    full: bool = False


def create_app(mindnet: Mindnet | None = None) -> FastAPI:
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
        errors = [{"field": ".".join(str(p) for p in e["loc"] if p != "body"), "message": e["msg"]}
                  for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse(status_code=422, content={"error": "invalid request", "detail": detail,
                                                      "errors": errors})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        m: Mindnet = app.state.mindnet
        from mindnet.store.collections import names
        counts = {kind: (m.client.count(name).count if m.client.collection_exists(name) else 0)
                  for kind, name in names(m.settings.collection_prefix).items()}
        return {"status": "ok", "collections": counts, "embedding": m.settings.embedding,
                "vault": str(m.settings.vault_root)}

    @app.post("/query")
    async def query(request: QueryRequest) -> dict[str, Any]:
        return await app.state.mindnet.aquery(request)

    @app.post("/ingest")
    async def ingest(request: IngestRequest | None = None) -> dict[str, Any]:
        report = await app.state.mindnet.aingest(full=bool(request and request.full))
        return report.as_dict()

    return app
