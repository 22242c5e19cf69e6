"""Mount the Chainlit chat (`app.py`) into the FastAPI app of `mindnet serve`.

Chainlit reads its working folder (`CHAINLIT_APP_ROOT`) once, when it is first imported:
`.chainlit/config.toml`, `chainlit.md` (the welcome page), `public/elements/*.jsx` (custom elements),
`public/logo_*.svg` and
`.files/` (uploads). The folder is generated at run time under `<cache_dir>/chainlit`, so nothing Chainlit
writes lands in the repository; `chainlit.md` is copied from this package folder and the custom
elements from `mindnet/ui/elements/`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.util
import json
import logging
import os
import re
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mindnet.data_folder import private_dir
from mindnet.security import replayed
from mindnet.service import Mindnet
from mindnet.ui.registry import set_mindnet

log = logging.getLogger(__name__)

UI_DIR = Path(__file__).resolve().parent
APP_FILE = UI_DIR / "app.py"
WELCOME = UI_DIR / "chainlit.md"
FALLBACK_WELCOME = "# mindnet\n\nAsk questions about your vault; each answer shows its steps and sources.\n"
# a source's panel is a SourcePanel element named "[n]" (so the answer's "[n]" links to it); Chainlit loads a
# custom element's code from public/elements/<name>.jsx, hence one copy per number a chat can show
MAX_SOURCES = 50
PAGE_ASSETS = ("mindnet.js", "import_strip.js", "mindnet.css", "mindnet-a11y.js", "mindnet-a11y.css", "icon.svg")
# links of Chainlit's page shell to public CDNs (Google Fonts, KaTeX): nothing may leave this machine
_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*/?>", re.S)
_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)

_mounted: list[str] = []


def prepare_app_root(root: Path) -> Path:
    """Create Chainlit's working folder with the welcome page and the custom elements; returns it."""
    root = private_dir(Path(root).resolve())     # Chainlit keeps the uploads in root/.files
    (root / "public" / "elements").mkdir(parents=True, exist_ok=True)
    welcome = WELCOME.read_text(encoding="utf-8") if WELCOME.is_file() else FALLBACK_WELCOME
    (root / "chainlit.md").write_text(welcome, encoding="utf-8")
    for jsx in (UI_DIR / "elements").glob("*.jsx"):
        shutil.copyfile(jsx, root / "public" / "elements" / jsx.name)
    panel = UI_DIR / "elements" / "SourcePanel.jsx"
    for n in range(1, MAX_SOURCES + 1):
        shutil.copyfile(panel, root / "public" / "elements" / f"[{n}].jsx")
    for logo in (UI_DIR / "public").glob("logo_*.svg"):   # Chainlit serves public/logo_<theme>.*
        shutil.copyfile(logo, root / "public" / logo.name)
    for asset in PAGE_ASSETS:
        shutil.copyfile(UI_DIR / "public" / asset, root / "public" / asset)
    write_translations(root / ".chainlit" / "translations")
    return root


def write_translations(folder: Path) -> None:
    """Chainlit's translations (its documented .chainlit/translations) with the step status words left out: it
    titles each finished step "Used <name>", which reads "Used How I answered" on every answer. Written again at
    each start, from the installed Chainlit, so they follow its version; found without importing chainlit, whose
    import fixes the app root."""
    spec = importlib.util.find_spec("chainlit")
    shipped = Path(next(iter(spec.submodule_search_locations or []), "")) / "translations" if spec else None
    if not shipped or not shipped.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for source in shipped.glob("*.json"):
        words = json.loads(source.read_text(encoding="utf-8"))
        status = words.get("chat", {}).get("messages", {}).get("status")
        if isinstance(status, dict):
            status.update({"using": "", "used": ""})
        (folder / source.name).write_text(json.dumps(words, ensure_ascii=False, indent=2), encoding="utf-8")


def local_only(template: Callable[[str], str]) -> Callable[[str], str]:
    """Chainlit's page shell without its links to public CDNs (the fonts come from the system, math is off)."""
    def page(root_path: str) -> str:
        return _REMOTE_LINK.sub("", template(root_path))
    page.__wrapped__ = template   # type: ignore[attr-defined]
    return page


def shell_script_hashes(root_path: str) -> frozenset[str]:
    """The Content-Security-Policy sources (`sha256-...`) of the inline scripts in Chainlit's page shell (it sets
    `global` and the theme there): the page's policy allows these and no other inline script."""
    import chainlit.server as server
    html = server.get_html_template(root_path)
    return frozenset("sha256-" + base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
                     for body in _INLINE_SCRIPT.findall(html))


def configure_chainlit() -> None:
    """Settings mindnet relies on, whatever the generated config.toml says."""
    from chainlit.config import config

    config.ui.name = "mindnet"
    config.ui.description = "Graph-aware chat over your Markdown vault"
    config.ui.cot = "full"
    config.features.unsafe_allow_html = False   # note text is data: never render HTML from it
    config.features.latex = False
    config.features.spontaneous_file_upload = None
    config.features.edit_message = False
    config.ui.custom_js = "/public/mindnet.js"     # the page shell prefixes the mount path
    config.ui.custom_css = "/public/mindnet.css"
    import chainlit.server as server
    if not hasattr(server.get_html_template, "__wrapped__"):
        server.get_html_template = local_only(server.get_html_template)


ACTION_FIELDS = {"name": str, "payload": dict, "label": str, "tooltip": str, "icon": (str, type(None)),
                 "forId": (str, type(None)), "id": str}


def action_problem(body: bytes) -> tuple[int, str] | None:
    """Why Chainlit's /project/action would fail on `body` with a 500 (an unknown session, an action it cannot
    build), as (status, message); None when Chainlit can take it (or validates it itself)."""
    from chainlit.session import WebsocketSession
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str) or \
            not isinstance(data.get("action"), dict):
        return None   # Chainlit's own request model answers 422
    if WebsocketSession.get_by_id(data["sessionId"]) is None:
        return 404, "no chat session with this id (it ended); reload the chat page"
    action = data["action"]
    wrong = sorted(k for k, v in action.items() if k not in ACTION_FIELDS or not isinstance(v, ACTION_FIELDS[k]))
    missing = sorted({"name", "payload"} - set(action))
    if wrong or missing:
        return 422, f"action: invalid fields {wrong}, missing {missing}; expected {sorted(ACTION_FIELDS)}"
    return None


class ActionRequestCheck:
    """Bad /project/action requests get a 4xx naming the problem instead of Chainlit's 500.

    A plain ASGI middleware, not Starlette's BaseHTTPMiddleware: that one turns a request whose client went
    away (a tab closed while its logo loaded) into RuntimeError("No response returned."), which the server
    logged as an error with two tracebacks. Chainlit's app has one inside: that error, raised after the client
    went away, ends here. A client that went away is no error: logged at debug."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and scope["path"].endswith("/project/action"):
            body = await read_body(receive)
            if body is None:
                log.debug("%s %s: the client went away before its request was read", scope["method"],
                          scope["path"])
                return
            problem = action_problem(body)
            if problem:
                answer = JSONResponse(status_code=problem[0], content={"error": "invalid action",
                                                                       "detail": problem[1]})
                await answer(scope, receive, send)
                return
            receive = replayed(body, receive)
        started = gone = False

        async def send_started(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        async def receive_watched() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        try:
            await self.app(scope, receive_watched, send_started)
        except RuntimeError:
            # Chainlit's own BaseHTTPMiddleware raises "No response returned." when the client went away first
            if started or not gone:
                raise
        if not started:
            log.debug("%s %s: the client went away before the answer", scope["method"], scope["path"])


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def require_token_login(token: str) -> None:
    """With MINDNET_API_TOKEN set, the chat asks for a login: any user name, the token as password. Chainlit
    then refuses its socket and actions to anyone not logged in."""
    import chainlit as cl
    from chainlit.config import config
    from chainlit.utils import wrap_user_function

    async def check(username: str, password: str) -> cl.User | None:
        if hmac.compare_digest(password.encode(), token.encode()):
            return cl.User(identifier=username.strip() or "mindnet", metadata={"provider": "token"})
        return None

    config.code.password_auth_callback = wrap_user_function(check)
    # Chainlit signs its login cookie with this secret; a fresh one per server start unless the user set one
    os.environ.setdefault("CHAINLIT_AUTH_SECRET", secrets.token_urlsafe(32))


def mount_ui(app: FastAPI, mindnet: Mindnet, *, path: str = "/ui") -> frozenset[str]:
    """Serve the chat at `path` (and redirect `/` there), using this process's `mindnet`. Once per process.
    Returns the hashes of the page shell's inline scripts (`shell_script_hashes`) for the page's policy."""
    set_mindnet(mindnet)
    if _mounted:
        raise RuntimeError(f"the chat UI is already mounted at {_mounted[0]} in this process; "
                           "Chainlit keeps one global app per process")
    configured = os.environ.get("CHAINLIT_APP_ROOT")   # set by the user: theirs to fill
    if not configured:
        root = prepare_app_root(mindnet.settings.cache_dir / "chainlit")
        configured = os.environ["CHAINLIT_APP_ROOT"] = str(root)
    from chainlit.config import APP_ROOT
    if Path(APP_ROOT).resolve() != Path(configured).resolve():
        log.warning("chainlit was imported before mount_ui and uses %s: the welcome page and the draft "
                    "editor may be missing there", APP_ROOT)
    from chainlit.utils import mount_chainlit

    from mindnet.ui.threads import enable_threads  # imports chainlit: only once its root is set

    configure_chainlit()
    if mindnet.settings.api_token:
        require_token_login(mindnet.settings.api_token)
    # conversations in data/threads.sqlite, resumable from the sidebar (the token login, if any, is the user)
    enable_threads(mindnet.settings.cache_dir, token_login=bool(mindnet.settings.api_token))
    mount_chainlit(app=app, target=str(APP_FILE), path=path)
    from chainlit.server import app as chainlit_app
    chainlit_app.add_middleware(ActionRequestCheck)
    _mounted.append(path)

    @app.get("/", include_in_schema=False)
    async def _root() -> RedirectResponse:
        return RedirectResponse(url=path)

    return shell_script_hashes(os.environ.get("CHAINLIT_PARENT_ROOT_PATH", "") + path)
