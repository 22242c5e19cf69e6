"""What the server's pages may load (issue 27, item 3), in-process: the Content-Security-Policy per route, and the
API docs - off by default, and when turned on served from this machine only. The browser side of both is in
tests/test_ui_remote_content.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mindnet.api import create_app
from mindnet.security import API_POLICY, SecurityPolicy
from mindnet.service import Mindnet
from mindnet.settings import Settings


def directives(policy: str) -> dict[str, str]:
    return dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())


def client(tmp_path: Path, **settings: object) -> TestClient:
    mindnet = Mindnet(Settings(qdrant_path=tmp_path / "qdrant", cache_dir=tmp_path / "cache",
                               log_dir=tmp_path / "logs", **settings))
    return TestClient(create_app(mindnet), base_url="http://127.0.0.1:8001")


def test_the_chat_may_load_from_this_server_only() -> None:
    policy = SecurityPolicy(ui_path="/ui", ui_script_hashes=frozenset({"sha256-abc="}))
    ui = directives(policy.content_security_policy("/ui/thread/1", "127.0.0.1:8001"))
    assert ui["default-src"] == "'self'" and ui["img-src"] == "'self' data: blob:"
    assert ui["media-src"] == "'self' data: blob:" and ui["font-src"] == "'self' data:"
    assert ui["script-src"] == "'self' 'unsafe-eval' 'sha256-abc='"          # no inline script but the shell's
    assert ui["connect-src"] == "'self' ws://127.0.0.1:8001 wss://127.0.0.1:8001"
    assert (ui["frame-ancestors"], ui["object-src"]) == ("'self'", "'none'")


@pytest.mark.parametrize("host", [None, "[::1]:8001", "a b", "x.example:99999999"])
def test_a_host_that_is_no_policy_source_adds_no_socket_entry(host: str | None) -> None:
    ui = directives(SecurityPolicy(ui_path="/ui").content_security_policy("/ui", host))
    assert ui["connect-src"] == "'self'"


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/docs/assets/swagger-ui-bundle.js"])
def test_the_api_docs_run_no_eval_and_no_inline_script(path: str) -> None:
    docs = directives(SecurityPolicy(ui_path="/ui").content_security_policy(path, "127.0.0.1:8001"))
    assert docs["script-src"] == "'self'" and docs["img-src"] == "'self' data: blob:"


@pytest.mark.parametrize("path", ["/health", "/query", "/open", "/", "/openapi.json", "/uix"])
def test_api_answers_may_load_nothing(path: str) -> None:
    assert SecurityPolicy(ui_path="/ui").content_security_policy(path, "127.0.0.1") == API_POLICY


def test_every_answer_carries_the_policy_and_no_referrer(tmp_path: Path) -> None:
    api = client(tmp_path)
    for r in (api.get("/health"), api.get("/nowhere"), api.post("/ingest", content=b"x")):   # 200, 404, 415
        assert r.headers["content-security-policy"] == API_POLICY, r.status_code
        assert (r.headers["referrer-policy"], r.headers["x-content-type-options"]) == ("no-referrer", "nosniff")


def test_api_docs_are_off_by_default(tmp_path: Path) -> None:
    api = client(tmp_path)
    assert (api.get("/docs").status_code, api.get("/redoc").status_code) == (404, 404)
    assert api.get("/openapi.json").json()["info"]["title"] == "mindnet"      # the schema is always there


def test_api_docs_when_turned_on_name_only_this_server(tmp_path: Path) -> None:
    api = client(tmp_path, api_docs=True)
    for page in ("/docs", "/redoc"):
        html = api.get(page).text
        urls = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert urls and all(u.startswith("/docs/") for u in urls), (page, urls)
        assert "<script>" not in html                                       # nothing inline: the policy holds
        for url in urls:
            asset = api.get(url)
            assert asset.status_code == 200 and asset.content, url
    assert directives(api.get("/docs").headers["content-security-policy"])["script-src"] == "'self'"


def test_api_docs_turned_on_without_their_files_say_how_to_install_them(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mindnet.errors import ConfigError
    monkeypatch.setitem(sys.modules, "fastapi_offline", None)      # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'mindnet\[docs\]'"):
        client(tmp_path, api_docs=True)
