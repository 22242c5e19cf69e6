"""`mindnet serve`: the HTTP API and the chat UI over one open index that follows the vault, and how it stops."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time

from rich.markup import escape

from mindnet.commands.common import _settings, console, err_console, plural


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mindnet.api import create_app
    from mindnet.live import LiveIndex
    from mindnet.service import Mindnet
    port = args.port or (8002 if args.dev else 8001)
    mindnet = Mindnet(_settings(args))
    mindnet.store_process = mindnet.settings.index_process   # the engine's long calls never stall an answer
    mindnet.check_free()   # an index folder another process holds is reported before the server starts
    mindnet.check_vault()  # an index built from another vault: refused before anything imports into it
    from mindnet.store.folder import serving_at
    local = "127.0.0.1" if args.host in ("", "0.0.0.0", "::", "[::]") else args.host
    serving_at(f"http://{'[' + local + ']' if ':' in local else local}:{port}")   # `mindnet mcp` may use it
    from mindnet.security import exposure_warning
    warning = exposure_warning(args.host, mindnet.settings.api_token)
    if warning:
        err_console.print(f"[bold yellow]Warning:[/] {escape(warning)}")
    # the index opens and the link graph loads while the server starts: /health answers at once, and the first
    # search is warm
    # the import runs in threads of this process: a 1 ms switch interval (Python's default is 5) lets the event
    # loop take the interpreter lock back sooner from them, so /health and searches are not queued behind an
    # import (drill, hostile notes: /health p99 and max halved; the import's own time unchanged within noise)
    sys.setswitchinterval(0.001)
    # the code of searches and imports (LlamaIndex, pydantic models: ~2 s) is loaded before the server listens;
    # loaded beside it, single steps of it (building a pydantic schema, a dataclass) held the interpreter lock
    # 100-800 ms while /health was probed (drill, damaged files). The index itself opens in the background.
    from mindnet.indexing import node_parser  # noqa: F401
    from mindnet.retrieval import retriever  # noqa: F401
    threading.Thread(target=_warm_and_freeze, args=(mindnet,), name="mindnet-warm", daemon=True).start()
    app = create_app(mindnet, ui=not args.no_ui, bind_host=args.host)
    # the index follows the vault: a catch-up import in the background, then one per batch of saves
    mindnet.live = LiveIndex(mindnet, watch=not args.no_watch).start(catch_up=not args.no_import)
    following = "watching the vault" if not args.no_watch else "not watching the vault (--no-watch)"
    docs = "API docs: /docs" if mindnet.settings.api_docs else "API schema: /openapi.json, docs with MINDNET_API_DOCS=1"
    console.print(f"mindnet serving on http://{args.host}:{port}  (chat: /ui, {docs}); {following}")
    # uvicorn stops gracefully on SIGTERM, then raises the signal again: with Python's default handler that would
    # end the process before the `finally` below closes the index
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    logging.getLogger("uvicorn.error").addFilter(_quiet_cancel_at_stop)
    threading.excepthook = _quiet_closed_loop(threading.excepthook)
    try:
        # an open tab or an answer still streaming must not hold the stop: after 3 s uvicorn cancels what runs
        # (an in-flight answer waiting on the LLM held it 86 s)
        uvicorn.run(app, host=args.host, port=port, log_level="warning", timeout_graceful_shutdown=3)
    finally:
        # uvicorn re-raises the SIGTERM it caught once it has stopped, so this `finally` is the one exit path
        try:
            mindnet.live.stop()
            mindnet.close()    # flushes and releases the index folder
        finally:
            _abandon_waiting_calls()
    return 0


def _abandon_waiting_calls(grace: float = 1.0) -> None:
    """End the process once the index is closed, even if worker threads still wait on Ollama: Python joins the
    request threads at exit, and a call to a slow LLM or embedding model would hold the stop for minutes. They
    only read (the import's threads were stopped before the index closed), so nothing is lost by not waiting."""
    deadline = time.monotonic() + grace
    waiting = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in waiting:
        thread.join(max(0.0, deadline - time.monotonic()))
    waiting = [t for t in waiting if t.is_alive()]
    if not waiting:
        return
    names = ", ".join(sorted({t.name.rsplit("_", 1)[0] for t in waiting}))
    err_console.print(f"stopped without waiting for {plural(len(waiting), 'running call')} ({names})", highlight=False)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _warm_and_freeze(mindnet) -> None:  # noqa: ANN001 - a Mindnet
    """Open the index and load the model, then move everything alive now (modules, the model, the index's
    objects) out of the garbage collector's view (`gc.freeze`): a full collection walks every tracked object
    and holds the interpreter lock meanwhile, which stopped `/health` for 150-200 ms while an import allocated
    (measured: a note of 16,000 headings, 146 ms; after the freeze, 10 ms). Only the young generations are
    collected before: a full collection here was itself such a stop (160 ms in the drill's restarts); what the
    old generation holds of garbage stays frozen (a few objects of the start)."""
    import gc
    mindnet.warm()
    gc.collect(1)
    gc.freeze()


def _quiet_cancel_at_stop(record: logging.LogRecord) -> bool:
    """Drop uvicorn's traceback for an answer it cancelled because the server stops: the stop was asked for."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def _quiet_closed_loop(hook):  # noqa: ANN001, ANN202 - threading.excepthook's type
    """A worker thread that finishes after the server's loop has closed (the chat history's SQLite connection
    of an answer cancelled at stop) fails handing its result back; that is the stop, not an error to print."""
    def quiet(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, RuntimeError) and str(args.exc_value) == "Event loop is closed":
            return
        hook(args)
    return quiet


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)
