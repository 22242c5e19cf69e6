"""A real, local HTTP server that speaks enough of Ollama's REST API for the test-suite.

The real clients (``ollama`` python package / httpx, and therefore
``llama_index.embeddings.ollama.OllamaEmbedding`` and ``llama_index.llms.ollama.Ollama``)
talk to it over the wire, sync and async, streaming and not.

Endpoints (shapes follow Ollama 0.12):

* ``GET /`` and ``HEAD /``          -> ``Ollama is running``
* ``GET /api/version``              -> ``{"version": ...}``
* ``GET /api/tags``                 -> configured models, names normalised to ``name:latest``
* ``GET /api/ps``                   -> ``{"models": []}``
* ``POST /api/show``                -> model info (``model_info`` carries ``<arch>.context_length``);
  unknown model -> 404 ``{"error": "model 'x' not found"}``
* ``POST /api/embed``               -> ``{"model", "embeddings": [[...]], ...}`` (``input`` str or list)
* ``POST /api/embeddings`` (legacy) -> ``{"embedding": [...]}``
* ``POST /api/chat`` / ``POST /api/generate`` -> one JSON object, or NDJSON lines when
  ``stream`` is true or missing (Ollama streams by default); the last line has ``done: true``,
  ``done_reason`` and the eval counts.

Generation/embedding on an unknown model -> 404
``{"error": "model \\"x\\" not found, try pulling it first"}``. Chat/generate on a model whose
name contains ``embed`` -> 400 ``{"error": "\\"x\\" does not support chat"}`` (embedding-only,
like nomic-embed-text). ``tools``/``format``/``options``/``think`` are accepted, recorded with the
request body and otherwise ignored.

Behaviour is scripted through attributes of :class:`FakeOllama` that tests may change while
the server runs (``embed_fn``, ``embed_mode``, ``chat_fn``, ``chat_mode``, ``script()``,
``models``, ``dim``, ``context_length``, ``latency``).

Tool calls: a reply (an item given to ``script()``, or what ``chat_fn`` returns) is either a
string - the assistant's text - or a dict ``{"content": "...", "tool_calls": [...]}`` (both keys
optional) with the tool calls in Ollama's wire format::

    fake.script([
        {"tool_calls": [{"function": {"name": "search", "arguments": {"query": "qdrant"}}}]},
        tool_call("read_note", {"note": "concepts/qdrant.md"}),    # the same, shorter
        "Die Antwort.",                                            # then a plain text reply
    ])
    fake.script(tool_call("search", {"query": "x"}))               # one dict: one reply

``/api/chat`` then answers ``message = {"role": "assistant", "content": ..., "tool_calls":
[{"function": {"name": ..., "arguments": {...}}}]}``. Non-streaming, that is the one JSON
object (``done_reason: "stop"``). Streaming, the content comes in chunks as usual, then one
``done: false`` line whose message has ``content: ""`` and all the ``tool_calls``, then the
final ``done: true`` line (as Ollama streams a tool call). ``/api/generate`` has no tools: it
answers only the reply's ``content``. The tool results the client sends back arrive as
``{"role": "tool", "content": ...}`` messages in the next ``/api/chat`` request's
``messages`` (see ``bodies("/api/chat")``). A malformed dict raises ``ValueError`` in
``script()`` (from ``chat_fn``: HTTP 500).
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import math
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

logger = logging.getLogger(__name__)

EmbedMode = Literal["ok", "empty", "wrong_dim", "error"]
ChatMode = Literal["ok", "error", "stream_error"]

DEFAULT_MODELS: frozenset[str] = frozenset({"nomic-embed-text", "phi3:mini"})
DEFAULT_DIM = 64
DEFAULT_CONTEXT_LENGTH = 4096
FAKE_VERSION = "0.12.6"
DEFAULT_ERROR_MESSAGE = "llama runner process has terminated: exit status 2"
# Fixed timestamp so responses are byte-identical across runs.
_CREATED_AT = "2025-01-01T00:00:00.000000Z"
_MODIFIED_AT = "2025-01-01T00:00:00+00:00"

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_CHUNK_BOUNDARY_RE = re.compile(r"(?<=\s)(?=\S)")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (unicode aware, so German umlauts stay in the word)."""
    return _TOKEN_RE.findall(text.lower())


def _bucket(token: str, dim: int) -> int:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % dim


def hashed_embedding(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    """Deterministic hashed bag-of-words vector, L2-normalised.

    Each lower-cased word token adds 1.0 to bucket ``blake2b(token) % dim``; texts sharing words
    therefore have a positive cosine similarity, and the result is identical across runs and
    processes. A text without any word token hashes the empty token, so the vector is never zero.
    """
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    tokens = tokenize(text) or [""]
    vec = [0.0] * dim
    for token in tokens:
        vec[_bucket(token, dim)] += 1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


def split_chunks(text: str) -> list[str]:
    """Split a reply into stream chunks at word starts; ``"".join(result) == text``.

    ``"Antwort: a b"`` -> ``["Antwort: ", "a ", "b"]``. The empty string gives ``[]``.
    """
    return [part for part in _CHUNK_BOUNDARY_RE.split(text) if part]


def normalize_model(name: str) -> str:
    """Ollama's model-name normalisation: a name without a tag means ``:latest``."""
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


Reply = str | dict[str, Any]
"""A scripted chat reply: the assistant's text, or ``{"content": str, "tool_calls": [...]}``."""


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, content: str = "") -> dict[str, Any]:
    """A reply that calls one tool: ``{"content": content, "tool_calls": [{"function": {...}}]}``."""
    return {"content": content, "tool_calls": [{"function": {"name": name, "arguments": dict(arguments or {})}}]}


def reply_parts(reply: Reply) -> tuple[str, list[dict[str, Any]]]:
    """``(content, tool_calls)`` of a reply, the tool calls as Ollama sends them; ``ValueError`` if malformed."""
    if isinstance(reply, str):
        return reply, []
    if not isinstance(reply, dict):
        raise ValueError(f"a reply is a str or a dict, not {type(reply).__name__}")
    unknown = set(reply) - {"content", "tool_calls"}
    if unknown:
        raise ValueError(f"unknown reply keys {sorted(unknown)}; a reply has 'content' and 'tool_calls'")
    content = reply.get("content") or ""
    if not isinstance(content, str):
        raise ValueError("a reply's 'content' is a str")
    calls: list[dict[str, Any]] = []
    for call in reply.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ValueError(f"a tool call is {{'function': {{'name': str, 'arguments': dict}}}}, not {call!r}")
        arguments = function.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ValueError(f"tool call {function['name']!r}: 'arguments' is a dict, not {arguments!r}")
        calls.append({"function": {"name": function["name"], "arguments": arguments}})
    return content, calls


def default_chat_fn(messages: list[dict[str, Any]]) -> str:
    """``"Antwort: <content of the last user message>"`` (``"Antwort: "`` if there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return f"Antwort: {message.get('content') or ''}"
    return "Antwort: "


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that can cut its open keep-alive connections on stop."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 fake: FakeOllama) -> None:
        self.fake = fake
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
            self._conns.clear()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid 40 ms stalls
    server: _Server

    # -- plumbing ---------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("fake-ollama %s - " + format, self.address_string(), *args)

    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _read_json(self) -> tuple[dict[str, Any], bool]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}, True
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {}, False
        return (body, True) if isinstance(body, dict) else ({}, False)

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str, *, head: bool = False) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _send_ndjson(self, lines: Iterable[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in lines:
            data = json.dumps(line).encode("utf-8") + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        path = self._path()
        body, valid = self._read_json() if method == "POST" else ({}, True)
        fake._record(path, body)
        try:
            fake._wait_latency()
            if not valid:
                raise _HTTPError(400, "invalid request body")
            route = fake._routes().get((method, path))
            if route is None:
                raise _HTTPError(404, "404 page not found")
            route(self, body)
        except _HTTPError as exc:
            if exc.status == 404 and exc.message == "404 page not found":
                self._send_text(404, exc.message)
            else:
                self._send_json(exc.status, {"error": exc.message})
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("fake-ollama: client went away during %s %s", method, path)
        except Exception as exc:  # a scripted embed_fn/chat_fn raised: answer like a broken runner
            logger.exception("fake-ollama: handler for %s %s raised", method, path)
            self._send_json(500, {"error": f"fake-ollama: {type(exc).__name__}: {exc}"})

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self._path() == "/":
            self.server.fake._record("/", {})
            self._send_text(200, "Ollama is running")
            return
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self.server.fake._record(self._path(), {})
        self._send_text(200 if self._path() == "/" else 404, "Ollama is running", head=True)

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


class FakeOllama:
    """Scriptable fake Ollama server on ``127.0.0.1:<free port>``.

    Attributes tests may change at run time:

    * ``models``: names the server knows (``"x"`` and ``"x:latest"`` are the same model).
    * ``dim``: dimension of the default embedding.
    * ``embed_fn(text) -> list[float]``: default ``hashed_embedding(text, self.dim)``.
    * ``embed_mode``: ``"ok"`` | ``"empty"`` (every vector is ``[]``) | ``"wrong_dim"`` (every
      vector gets one extra ``0.0`` component, so ``dim + 1``) | ``"error"`` (HTTP 500).
    * ``chat_fn(messages) -> str | dict``: reply for chat/generate when no scripted reply is
      queued (a dict reply may call tools, see the module docstring).
    * ``chat_mode``: ``"ok"`` | ``"error"`` (HTTP 500) | ``"stream_error"`` (streams the first
      chunk, then an ``{"error": ...}`` line, as Ollama does when the runner dies mid-answer;
      a non-streaming request gets HTTP 500).
    * ``context_length``: reported by ``/api/show`` (llama-index reads it as context window).
    * ``latency``: seconds each request waits before answering (interrupted by ``stop()``).
    * ``error_message``: text of the error JSON in the error modes.
    """

    def __init__(self, *, models: Iterable[str] | None = None, dim: int = DEFAULT_DIM,
                 context_length: int = DEFAULT_CONTEXT_LENGTH) -> None:
        self.models: set[str] = set(DEFAULT_MODELS if models is None else models)
        self.dim = dim
        self.context_length = context_length
        self.embed_fn: Callable[[str], list[float]] = self.default_embed
        self.embed_mode: EmbedMode = "ok"
        self.chat_fn: Callable[[list[dict[str, Any]]], Reply] = default_chat_fn
        self.chat_mode: ChatMode = "ok"
        self.latency = 0.0
        self.error_message = DEFAULT_ERROR_MESSAGE
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._replies: collections.deque[Reply] = collections.deque()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._stopping = threading.Event()

    # -- scripting ----------------------------------------------------------------------------
    def default_embed(self, text: str) -> list[float]:
        return hashed_embedding(text, self.dim)

    def script(self, replies: Iterable[Reply] | dict[str, Any]) -> None:
        """Queue replies; each chat/generate request consumes the next one, then ``chat_fn``.

        A reply is a str or a dict with ``content`` and/or ``tool_calls`` (module docstring); a
        single dict is one reply. Malformed dicts raise ``ValueError`` here and nothing is queued.
        """
        queued = [replies] if isinstance(replies, dict) else list(replies)
        for reply in queued:
            if not isinstance(reply, str):
                reply_parts(reply)
        with self._lock:
            self._replies.extend(queued)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    def reset(self) -> None:
        """Back to defaults (models, dim, modes, functions, queue, recorded requests)."""
        with self._lock:
            self.models = set(DEFAULT_MODELS)
            self.dim = DEFAULT_DIM
            self.context_length = DEFAULT_CONTEXT_LENGTH
            self.embed_fn = self.default_embed
            self.embed_mode = "ok"
            self.chat_fn = default_chat_fn
            self.chat_mode = "ok"
            self.latency = 0.0
            self.error_message = DEFAULT_ERROR_MESSAGE
            self._replies.clear()
            self.requests.clear()

    # -- inspection ---------------------------------------------------------------------------
    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def recorded(self) -> list[tuple[str, dict[str, Any]]]:
        """A snapshot copy of ``requests``."""
        with self._lock:
            return list(self.requests)

    def count(self, path: str) -> int:
        """How many requests hit ``path`` (e.g. ``"/api/embed"``)."""
        return sum(1 for p, _ in self.recorded() if p == path)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        """JSON bodies of the requests to ``path``, in arrival order."""
        return [b for p, b in self.recorded() if p == path]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeOllama was never started")
        return self._port

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>`` (the form OLLAMA_HOST takes)."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; stays valid after ``stop()`` (then refusing connections)."""
        return f"http://{self.host}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> FakeOllama:
        """Start serving; a restart after ``stop()`` reuses the same port."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", self._port or 0), _Handler, self)
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
            name=f"fake-ollama-{self._port}", daemon=True,
        )
        self._thread.start()
        logger.debug("fake-ollama listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stop serving; new connections are refused and open keep-alive connections are cut."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        server.close_connections()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None
        logger.debug("fake-ollama on port %s stopped", self._port)

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ---------------------------------------------------------------------
    def _wait_latency(self) -> None:
        if self.latency > 0:
            self._stopping.wait(self.latency)

    def _routes(self) -> dict[tuple[str, str], Callable[[_Handler, dict[str, Any]], None]]:
        return {
            ("GET", "/api/version"): self._handle_version,
            ("GET", "/api/tags"): self._handle_tags,
            ("GET", "/api/ps"): self._handle_ps,
            ("POST", "/api/show"): self._handle_show,
            ("POST", "/api/embed"): self._handle_embed,
            ("POST", "/api/embeddings"): self._handle_embeddings,
            ("POST", "/api/chat"): self._handle_chat,
            ("POST", "/api/generate"): self._handle_generate,
        }

    def knows(self, model: str) -> bool:
        return normalize_model(model) in {normalize_model(m) for m in self.models}

    def _require_model(self, body: dict[str, Any]) -> str:
        model = body.get("model") or body.get("name") or ""
        if not model:
            raise _HTTPError(400, "model is required")
        if not self.knows(model):
            raise _HTTPError(404, f'model "{model}" not found, try pulling it first')
        return str(model)

    @staticmethod
    def _is_embedding_only(model: str) -> bool:
        return "embed" in model.lower()

    def _model_details(self, model: str) -> dict[str, Any]:
        embedding = self._is_embedding_only(model)
        return {
            "parent_model": "",
            "format": "gguf",
            "family": "nomic-bert" if embedding else "llama",
            "families": ["nomic-bert" if embedding else "llama"],
            "parameter_size": "137M" if embedding else "3.8B",
            "quantization_level": "F16" if embedding else "Q4_0",
        }

    @staticmethod
    def _digest(model: str) -> str:
        return hashlib.sha256(normalize_model(model).encode("utf-8")).hexdigest()

    def _handle_version(self, handler: _Handler, body: dict[str, Any]) -> None:
        handler._send_json(200, {"version": FAKE_VERSION})

    def _handle_ps(self, handler: _Handler, body: dict[str, Any]) -> None:
        handler._send_json(200, {"models": []})

    def _handle_tags(self, handler: _Handler, body: dict[str, Any]) -> None:
        models = []
        for model in sorted({normalize_model(m) for m in self.models}):
            models.append({
                "name": model,
                "model": model,
                "modified_at": _MODIFIED_AT,
                "size": 274302450 if self._is_embedding_only(model) else 2176178913,
                "digest": self._digest(model),
                "details": self._model_details(model),
            })
        handler._send_json(200, {"models": models})

    def _handle_show(self, handler: _Handler, body: dict[str, Any]) -> None:
        model = body.get("model") or body.get("name") or ""
        if not model or not self.knows(model):
            raise _HTTPError(404, f"model '{model}' not found")
        embedding = self._is_embedding_only(model)
        arch = "nomic-bert" if embedding else "llama"
        model_info: dict[str, Any] = {
            "general.architecture": arch,
            "general.parameter_count": 136727040 if embedding else 3821079552,
            f"{arch}.context_length": self.context_length,
            f"{arch}.embedding_length": self.dim,
        }
        handler._send_json(200, {
            "license": "MIT",
            "modelfile": f"FROM {normalize_model(model)}\n",
            "parameters": f"num_ctx                        {self.context_length}",
            "template": "{{ .Prompt }}",
            "details": self._model_details(model),
            "model_info": model_info,
            "capabilities": ["embedding"] if embedding else ["completion", "tools"],
            "modified_at": _MODIFIED_AT,
        })

    # embeddings
    def _vector(self, text: str) -> list[float]:
        if self.embed_mode == "empty":
            return []
        vec = list(self.embed_fn(text))
        if self.embed_mode == "wrong_dim":
            vec.append(0.0)
        return vec

    def _check_embed_mode(self) -> None:
        if self.embed_mode == "error":
            raise _HTTPError(500, self.error_message)
        if self.embed_mode not in ("ok", "empty", "wrong_dim"):
            raise _HTTPError(500, f"fake-ollama: unknown embed_mode {self.embed_mode!r}")

    def _handle_embed(self, handler: _Handler, body: dict[str, Any]) -> None:
        model = self._require_model(body)
        self._check_embed_mode()
        raw = body.get("input")
        if raw is None:
            texts: list[str] = []
        elif isinstance(raw, str):
            texts = [raw]
        else:
            texts = [str(t) for t in raw]
        handler._send_json(200, {
            "model": model,
            "embeddings": [self._vector(t) for t in texts],
            "total_duration": 1000000,
            "load_duration": 100000,
            "prompt_eval_count": sum(len(tokenize(t)) for t in texts),
        })

    def _handle_embeddings(self, handler: _Handler, body: dict[str, Any]) -> None:
        self._require_model(body)
        self._check_embed_mode()
        prompt = body.get("prompt") or ""
        handler._send_json(200, {"embedding": self._vector(prompt) if prompt else []})

    # generation
    def _next_reply(self, messages: list[dict[str, Any]]) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self.chat_fn(messages)

    def _check_generation(self, body: dict[str, Any], kind: str) -> str:
        model = self._require_model(body)
        if self._is_embedding_only(model):
            raise _HTTPError(400, f'"{model}" does not support {kind}')
        return model

    @staticmethod
    def _counts(prompt_tokens: int, reply: str) -> dict[str, Any]:
        return {
            "total_duration": 2000000,
            "load_duration": 100000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 500000,
            "eval_count": max(1, len(split_chunks(reply))),
            "eval_duration": 1000000,
        }

    def _generation(self, handler: _Handler, body: dict[str, Any], messages: list[dict[str, Any]],
                    piece: Callable[[str], dict[str, Any]], extra_final: dict[str, Any],
                    calls_piece: Callable[[str, list[dict[str, Any]]], dict[str, Any]] | None = None) -> None:
        """Shared chat/generate flow; ``piece(text)`` builds the content part of a line,
        ``calls_piece(text, tool_calls)`` that of a line with tool calls (None: they are dropped)."""
        model = str(body["model"])
        stream = body.get("stream", True) is not False
        if self.chat_mode == "error":
            raise _HTTPError(500, self.error_message)
        if self.chat_mode not in ("ok", "stream_error"):
            raise _HTTPError(500, f"fake-ollama: unknown chat_mode {self.chat_mode!r}")
        if self.chat_mode == "stream_error" and not stream:
            raise _HTTPError(500, self.error_message)
        if not messages:
            # Ollama answers an empty request by just loading the model.
            handler._send_json(200, {"model": model, "created_at": _CREATED_AT, **piece(""),
                                     "done_reason": "load", "done": True})
            return
        reply, tool_calls = reply_parts(self._next_reply(messages))
        if calls_piece is None:
            tool_calls = []
        prompt_tokens = sum(len(tokenize(str(m.get("content") or ""))) for m in messages)
        if stream:
            last = piece("")
        else:
            last = calls_piece(reply, tool_calls) if calls_piece and tool_calls else piece(reply)
        final = {"model": model, "created_at": _CREATED_AT, **last,
                 "done_reason": "stop", "done": True, **extra_final,
                 **self._counts(prompt_tokens, reply)}
        if not stream:
            handler._send_json(200, final)
            return

        def lines() -> Iterator[dict[str, Any]]:
            chunks = split_chunks(reply)
            if self.chat_mode == "stream_error":
                for chunk in chunks[:1]:
                    yield {"model": model, "created_at": _CREATED_AT, **piece(chunk), "done": False}
                yield {"error": self.error_message}
                return
            for chunk in chunks:
                yield {"model": model, "created_at": _CREATED_AT, **piece(chunk), "done": False}
            if calls_piece and tool_calls:
                yield {"model": model, "created_at": _CREATED_AT, **calls_piece("", tool_calls), "done": False}
            yield final

        handler._send_ndjson(lines())

    def _handle_chat(self, handler: _Handler, body: dict[str, Any]) -> None:
        self._check_generation(body, "chat")
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        self._generation(handler, body, messages,
                         lambda text: {"message": {"role": "assistant", "content": text}}, {},
                         lambda text, calls: {"message": {"role": "assistant", "content": text, "tool_calls": calls}})

    def _handle_generate(self, handler: _Handler, body: dict[str, Any]) -> None:
        self._check_generation(body, "generate")
        messages: list[dict[str, Any]] = []
        if body.get("system"):
            messages.append({"role": "system", "content": str(body["system"])})
        if body.get("prompt"):
            messages.append({"role": "user", "content": str(body["prompt"])})
        self._generation(handler, body, messages, lambda text: {"response": text},
                         {"context": [1, 2, 3]})
