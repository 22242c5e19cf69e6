"""mindnet's HTTP API (FastAPI): /health, /query, /ingest - and, mounted beside it, the Chainlit chat.

Handlers translate requests into calls on the `Mindnet` service and its errors into HTTP answers; no logic
of their own. `create_app()` is the factory `mindnet serve` runs; other routers (chat, feedback, the UI)
attach to the same app.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from mindnet.chat.engine import ChatEvent, ChatRequest, ChatResponse
from mindnet.errors import (
    ConfigError,
    DataWriteError,
    DimensionMismatchError,
    DraftConflictError,
    DraftError,
    EmptyIndexError,
    ImportRunningError,
    IndexRebuildingError,
    InputTooLargeError,
    LLMUnavailableError,
    MassDeleteError,
    MindnetError,
    NoteChangedError,
    NoteNotFoundError,
    QueryError,
    StoreLockedError,
    VaultMismatchError,
    VaultWriteError,
)
from mindnet.public_paths import public_text
from mindnet.retrieval.query import QueryRequest
from mindnet.security import SecurityMiddleware, SecurityPolicy
from mindnet.service import Mindnet
from mindnet.settings import Settings

log = logging.getLogger(__name__)

STATUS_OF: dict[type[MindnetError], int] = {
    QueryError: 422, ConfigError: 500, StoreLockedError: 503, DimensionMismatchError: 409, LLMUnavailableError: 503,
    EmptyIndexError: 409, ImportRunningError: 409, IndexRebuildingError: 503, InputTooLargeError: 413,
    NoteNotFoundError: 404, NoteChangedError: 409, VaultWriteError: 507, DataWriteError: 507,
    VaultMismatchError: 409, MassDeleteError: 409,
}


def _status(exc: MindnetError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_OF:
            return STATUS_OF[cls]
    return 500


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    full: StrictBool = False   # "yes" or 1 must not start a full rebuild
    confirm_deletes: StrictBool = Field(False, description=(
        "delete even when over half of the index's notes are gone from the vault (else 409, nothing written)"))


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


class RequestThreads(ThreadPoolExecutor):
    """The server loop's default executor (`asyncio.to_thread`: searches, embedding and LLM calls). On shutdown
    `asyncio.run` waits for the default executor without a time limit (Python 3.11): a request waiting on a slow
    model held `mindnet serve`'s stop for 86 s. This one does not wait for running calls; they only read, and
    `mindnet serve` ends the process once the index is closed."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


def create_app(mindnet: Mindnet | None = None, *, ui: bool = False, bind_host: str | None = None) -> FastAPI:
    """The HTTP API; with `ui`, the Chainlit chat is mounted at /ui (once per process) and / redirects there.

    Every route, the mounted chat included, sits behind `SecurityMiddleware` (Host, Origin, token, JSON bodies,
    Content-Security-Policy); `bind_host` is the address `mindnet serve` listens on (a name given there is an
    allowed Host). `/docs` and `/redoc` exist with MINDNET_API_DOCS=true (`mindnet.api_docs`)."""
    # FastAPI's own /docs and /redoc load from public CDNs: mindnet serves its own, from this machine, on request
    mindnet = mindnet or Mindnet.from_env()
    mindnet.serving = True       # searches are answered while it imports (Mindnet.serving)
    # agents: the MCP server over streamable HTTP at /mcp, on the same open index (mindnet.agents.mcp_server)
    from mindnet.agents.mcp_server import McpEndpoint
    mcp = McpEndpoint(mindnet)
    health_threads: list[RequestThreads] = []     # /health's own thread, made for each run of the app

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        asyncio.get_running_loop().set_default_executor(RequestThreads(thread_name_prefix="mindnet-request"))
        health_threads[:] = [RequestThreads(max_workers=1, thread_name_prefix="mindnet-health")]
        try:
            async with mcp.running():
                yield
        finally:
            health_threads.pop().shutdown()     # its idle worker would count as a call still running at the stop
            if ui:
                from mindnet.ui.threads import close_data_layers
                await close_data_layers()

    app = FastAPI(title="mindnet", description="Graph-aware retrieval and chat over a Markdown vault",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.mindnet = mindnet
    settings = app.state.mindnet.settings
    for path in ("/mcp", "/mcp/"):
        app.add_route(path, mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)

    @app.exception_handler(MindnetError)
    async def _mindnet_error(_: Request, exc: MindnetError) -> JSONResponse:
        body: dict[str, Any] = {"error": type(exc).__name__, "detail": public_text(str(exc), settings)}
        if isinstance(exc, QueryError) and exc.field:
            body["field"] = exc.field
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, IndexRebuildingError) else None
        return JSONResponse(status_code=_status(exc), content=body, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        def field(e: dict) -> str:   # a JSON syntax error's location is a byte offset, not a field
            if e["type"] == "json_invalid":
                return "body"
            return ".".join(str(p) for p in e["loc"] if p != "body") or "body"

        errors = [{"field": field(e), "message": e["msg"]} for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse(status_code=422, content={"error": "invalid request", "detail": detail,
                                                      "errors": errors})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:   # a bug: logged, never a traceback
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse(status_code=500, content={"error": "internal error",
                                                      "detail": f"{type(exc).__name__}; see the server log"})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Answers at once, also during an import: then with the counts of the last complete one."""
        m: Mindnet = app.state.mindnet
        importing = m.importing

        def look() -> tuple[dict[str, int], list[str]]:
            return (m.last_counts if importing else m.counts(wait=False)), m.problems()
        # a thread of its own: the request threads may all be busy with searches (8 clients in the drill)
        own = health_threads[0] if health_threads else None      # None: the default executor (no lifespan ran)
        counts, problems = await asyncio.get_running_loop().run_in_executor(own, look)
        body = {"status": "degraded" if problems else "ok", "problems": problems, "importing": importing,
                "opening": m.opening, "searchable": m.searchable, "searching_from": "index" if m.opened else None,
                "engine": m.engine,
                "counts_from": "last complete import" if importing else "index", "collections": counts,
                "embedding": m.settings.embedding, "vault": Path(m.settings.vault_root).name}
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
        confirm = (lambda deleting, indexed: True) if request and request.confirm_deletes else None
        report = await app.state.mindnet.aingest(full=bool(request and request.full), confirm_deletes=confirm)
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
    _add_analyze_routes(app)
    if settings.api_docs:
        from mindnet.api_docs import add_api_docs
        add_api_docs(app)
    shell_scripts: frozenset[str] = frozenset()
    if ui:
        from mindnet.ui.mount import mount_ui
        shell_scripts = mount_ui(app, app.state.mindnet, path="/ui")
    app.add_middleware(SecurityMiddleware, policy=SecurityPolicy.from_settings(
        settings, bind_host=bind_host, ui_path="/ui" if ui else None, ui_script_hashes=shell_scripts))
    return app


# --------------------------------------------------------------------------- chat, feedback, drafts


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    query_id: str = Field(max_length=100)
    node_id: str = Field("generated_answer", max_length=300)
    score: StrictInt                                   # true/1.0 are not scores
    comment: str | None = Field(None, max_length=4000)
    reasons: list[str] = Field(default_factory=list, max_length=10,
                               description="why the answer was bad: wrong_source, missing_note, wrong_answer")


class DraftRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    markdown: str
    note_type: str = Field(max_length=200)
    overwrite: StrictBool = False
    replaces: str | None = Field(None, pattern="^[0-9a-f]{64}$", description=(
        "with overwrite: the version of the note this draft replaces, as the 409 answer gave it (conflict.version); "
        "a note that changed since is refused with 409"))


def _add_chat_routes(app: FastAPI) -> None:
    @app.post("/chat")
    async def chat(request: ChatRequest) -> ChatResponse:
        return await app.state.mindnet.chat.achat(request)

    @app.post("/chat/stream")
    async def chat_stream(request: ChatRequest) -> StreamingResponse:
        engine = app.state.mindnet.chat
        await engine.aroute(request)  # an invalid strategy override is a 422 before streaming starts

        async def lines() -> AsyncIterator[str]:
            async for event in ended_stream(engine.astream(request), app.state.mindnet.settings):
                yield event.model_dump_json() + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.post("/feedback")
    async def feedback(request: FeedbackRequest) -> dict[str, Any]:
        record = app.state.mindnet.logs.record_feedback(request.query_id, request.score, node_id=request.node_id,
                                                        comment=request.comment, reasons=request.reasons)
        return record.model_dump(mode="json")

    @app.post("/drafts")
    async def drafts(request: DraftRequest) -> Any:
        """Save a draft as a new note (409 with both texts and the note's version when one is in the way), or with
        `overwrite` and `replaces` over that version (backup in the answer); a failed write is a 507 and leaves
        nothing behind."""
        try:
            return await app.state.mindnet.asave_draft(request.markdown, request.note_type,
                                                      overwrite=request.overwrite, replaces=request.replaces)
        except (DraftError, VaultWriteError) as exc:
            s = app.state.mindnet.settings
            status = 507 if isinstance(exc, VaultWriteError) else 409 if isinstance(exc, DraftConflictError) else 422
            body: dict[str, Any] = {"error": "VaultWriteError" if status == 507 else "DraftError",
                                    "detail": public_text(str(exc), s),
                                    "path": public_text(exc.path, s) if exc.path else exc.path}
            if isinstance(exc, DraftConflictError) and exc.conflict is not None:
                body["conflict"] = exc.conflict
            return JSONResponse(status_code=status, content=body)


async def ended_stream(events: AsyncIterator[ChatEvent], settings: Settings) -> AsyncIterator[ChatEvent]:
    """The engine's events, ending with exactly one `done` or `error`, whatever goes wrong on the way."""
    try:
        async for event in events:
            yield event
            if event.kind == "done":
                return
    except MindnetError as exc:
        log.warning("chat stream failed: %s", exc)
        yield ChatEvent(kind="error", data={"message": public_text(str(exc), settings),
                                            "error": type(exc).__name__})
        return
    except Exception as exc:  # noqa: BLE001 - a bug: the client still gets its last event, the log the traceback
        log.error("chat stream failed", exc_info=exc)
        yield ChatEvent(kind="error", data={"message": f"internal error ({type(exc).__name__}); see the server log",
                                            "error": "internal error"})
        return
    yield ChatEvent(kind="error", data={"message": "the answer ended without a result", "error": "internal error"})



# --------------------------------------------------------------------------- save & analyze


class AnalyzeRequest(BaseModel):
    """Either `text` (a Markdown draft) or `note` (a note id or vault-relative path). Nothing is written."""

    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(None, description="the draft's Markdown (size limit: analysis.yaml max_text_bytes)")
    note: str | None = Field(None, max_length=1000, description="an indexed note's id or vault-relative path")
    path: str | None = Field(None, max_length=1000, description="where the draft would be saved (type path rules)")
    note_type: str | None = Field(None, max_length=100, description="the draft's type, if known")
    limit: StrictInt | None = Field(None, description="link suggestions returned (default: analysis.yaml limit)")
    llm: StrictBool | None = Field(None, description="false: rule-based relation kinds only, even with an LLM")


def _add_analyze_routes(app: FastAPI) -> None:
    async def analyze(request: AnalyzeRequest) -> dict[str, Any]:
        result = await app.state.mindnet.aanalyze(**request.model_dump())
        return result.model_dump(mode="json")

    for path in ("/ingest/analyze", "/analyze"):
        app.add_api_route(path, analyze, methods=["POST"], summary="Save & Analyze: suggestions for a draft or note")
