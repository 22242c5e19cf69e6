"""The middleware mindnet puts in front of Chainlit's routes (`mount.ActionRequestCheck`), driven as the server
drives it (ASGI): a client that goes away is no error, bad actions get a 4xx, good ones reach Chainlit whole."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from starlette.responses import FileResponse, JSONResponse
from starlette.types import Message, Receive, Scope, Send

from mindnet.ui.mount import UI_DIR, ActionRequestCheck

LOGO = UI_DIR / "public" / "logo_light.svg"


def http_scope(method: str, path: str) -> Scope:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
            "query_string": b"", "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000)}


def call(app: Any, scope: Scope, messages: list[Message]) -> list[Message]:
    """Run `app` on `scope`; the client sends `messages`, then nothing more. Returns what was sent back."""
    sent: list[Message] = []
    incoming = list(messages)

    async def receive() -> Message:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()     # the client sends nothing more
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


async def logo(scope: Scope, receive: Receive, send: Send) -> None:
    """What Chainlit's GET /logo answers: the logo file (a FileResponse, which stops when the client leaves)."""
    await FileResponse(LOGO)(scope, receive, send)


async def logo_not_ready(scope: Scope, receive: Receive, send: Send) -> None:
    """A busy server: the logo is not on its way yet when the tab closes, and the response, like Starlette's,
    stops when it hears that its client went away."""
    while (await receive())["type"] != "http.disconnect":
        pass


def test_a_client_that_went_away_before_the_answer_is_logged_at_debug_not_as_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mindnet")
    sent = call(ActionRequestCheck(logo_not_ready), http_scope("GET", "/ui/logo"),
                [{"type": "http.request", "body": b"", "more_body": False}, {"type": "http.disconnect"}])
    assert sent == []                                        # nobody to answer
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("mindnet")]
    assert records == [(logging.DEBUG, "GET /ui/logo: the client went away before the answer")]


def test_a_client_that_stays_gets_the_logo_and_nothing_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mindnet")
    sent = call(ActionRequestCheck(logo), http_scope("GET", "/ui/logo"),
                [{"type": "http.request", "body": b"", "more_body": False}])
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert b"".join(m.get("body", b"") for m in sent[1:]) == LOGO.read_bytes()
    assert [r for r in caplog.records if r.name.startswith("mindnet")] == []


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Chainlit's action endpoint, reduced to answering with the body it read."""
    message = await receive()
    await JSONResponse({"read": message["body"].decode()})(scope, receive, send)


@pytest.mark.parametrize(("body", "status"), [
    (b"{not json", 200),                                     # Chainlit's to answer: it reads the body whole
    (json.dumps({"sessionId": "ended", "action": {"name": "rate", "payload": {}}}).encode(), 404),
])
def test_actions_are_checked_and_the_others_reach_chainlit_whole(body: bytes, status: int) -> None:
    half = len(body) // 2      # sent in two parts, as a client may
    sent = call(ActionRequestCheck(echo), http_scope("POST", "/ui/project/action"),
                [{"type": "http.request", "body": body[:half], "more_body": True},
                 {"type": "http.request", "body": body[half:], "more_body": False}])
    assert sent[0]["status"] == status
    answer = json.loads(sent[1]["body"])
    if status == 200:
        assert answer == {"read": body.decode()}
    else:
        assert answer["error"] == "invalid action" and "reload the chat page" in answer["detail"]


def test_an_action_whose_client_went_away_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mindnet")
    sent = call(ActionRequestCheck(echo), http_scope("POST", "/ui/project/action"),
                [{"type": "http.request", "body": b'{"sessionId"', "more_body": True}, {"type": "http.disconnect"}])
    assert sent == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("mindnet")] == [
        (logging.DEBUG, "POST /ui/project/action: the client went away before its request was read")]
