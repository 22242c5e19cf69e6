"""`mindnet mcp` as an agent starts it: a subprocess on stdin/stdout, talked to with the MCP SDK's own client
(`ClientSession` over `stdio_client`), on a copy of the sample vault imported with the fake Ollama.

One server serves the whole module (its start costs seconds on a busy machine); the client session runs on an
event loop in a background thread, so the tests call it synchronously. The read-only servers get their own vault
and index: the embedded index has one process holding it at a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fake_ollama import FakeOllama
from helpers_vault import copy_sample_vault
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from mindnet import safe_write

STARTUP_S = 120.0          # a server's start or an import, on 2 busy cores
CALL_S = 120.0             # one request
READ_TOOLS = {"search", "read_note", "related", "suggest_links", "recent_changes"}
WRITE_TOOLS = {"write_note", "append_to_note", "add_links"}
VERSION = re.compile(r"[0-9a-f]{64}")

T = TypeVar("T")


# --------------------------------------------------------------------------- helpers


def mindnet_env(root: Path, ollama_url: str, **extra: str) -> dict[str, str]:
    """The environment of a mindnet process on `root/vault` with its index, cache and logs under `root`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDNET_")}
    env.update({
        "MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": ollama_url,
        "MINDNET_QDRANT_PATH": str(root / "qdrant"), "MINDNET_CACHE_DIR": str(root / "cache"),
        "MINDNET_LOG_DIR": str(root / "logs"), "MINDNET_VAULT_ROOT": str(root / "vault"),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **extra,
    })
    return env


def imported_sample_vault(root: Path, ollama_url: str) -> dict[str, str]:
    """A copy of the sample vault under `root`, imported by `mindnet ingest`; the environment used."""
    root.mkdir(parents=True, exist_ok=True)
    copy_sample_vault(root / "vault")
    env = mindnet_env(root, ollama_url)
    done = subprocess.run([sys.executable, "-m", "mindnet.cli", "ingest", "--json"], env=env, cwd=root,
                          capture_output=True, text=True, timeout=STARTUP_S)
    assert done.returncode == 0, f"mindnet ingest failed:\n{done.stdout}\n{done.stderr}"
    assert json.loads(done.stdout)["new"] >= 30
    return env


class StdioServer:
    """`mindnet mcp` in a subprocess with one initialized `ClientSession` to it, on an event loop of its own
    thread; `call()` and `run()` block until the answer. Anything the client could not read as a protocol message
    (something else printed on the server's stdout) lands in `stray`."""

    def __init__(self, root: Path, env: dict[str, str], *args: str, name: str = "mcp") -> None:
        self.root = root
        self.env = env
        self.args = args
        self.errlog = root / f"{name}.stderr.log"
        self.stray: list[Exception] = []
        self.session: ClientSession | None = None
        self.init: types.InitializeResult | None = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"{name}-client", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    def start(self) -> StdioServer:
        self._thread.start()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(), self.loop)
        self._main.add_done_callback(lambda _: self._ready.set())
        if not self._ready.wait(STARTUP_S) or self.session is None:
            error = self._main.exception() if self._main.done() else None
            self.stop()
            raise RuntimeError(f"mindnet mcp did not start ({error!r}); its stderr:\n{self.log()}")
        return self

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        params = StdioServerParameters(command=sys.executable, args=["-m", "mindnet.cli", "mcp", *self.args],
                                       env=self.env, cwd=str(self.root))
        with open(self.errlog, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=CALL_S),
                                         message_handler=self._on_message) as session:
                    self.init = await session.initialize()
                    self.session = session
                    self._ready.set()
                    await self._stop.wait()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):     # a line on stdout that is not a JSON-RPC message
            self.stray.append(message)

    def run(self, fn: Callable[[ClientSession], Awaitable[T]]) -> T:
        assert self.session is not None, "the server is not running"
        return asyncio.run_coroutine_threadsafe(fn(self.session), self.loop).result(CALL_S + 30)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        return self.run(lambda s: s.call_tool(name, arguments or {}))

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return ok(self.call(name, arguments))

    def refused(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        return refused(self.call(name, arguments))

    def stop(self) -> None:
        """Close the session: the client closes the server's stdin and waits for it to exit."""
        if self._stop is not None and not self._main.done():
            self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._main.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            if not self.loop.is_running():
                self.loop.close()

    def log(self) -> str:
        return self.errlog.read_text(errors="replace") if self.errlog.exists() else ""


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """The data of a successful tool call: the structured content, which the text content says as JSON too."""
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert not result.isError, text
    assert result.structuredContent is not None
    assert json.loads(text) == result.structuredContent
    return result.structuredContent


def refused(result: types.CallToolResult) -> str:
    """The message of a refused tool call, worded for a model: one line of text, no Python traceback."""
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert result.isError, f"the call was not refused: {text[:500]}"
    assert text.strip() and "Traceback" not in text and 'File "' not in text, text
    return text


@dataclass
class Setup:
    root: Path
    vault: Path
    log_dir: Path
    env: dict[str, str]
    server: StdioServer

    def history(self) -> list[dict[str, Any]]:
        path = self.log_dir / "search_history.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("mcp_stdio")
    with FakeOllama() as ollama:
        env = imported_sample_vault(root, ollama.url)
        server = StdioServer(root, env).start()
        try:
            yield Setup(root, root / "vault", root / "logs", env, server)
        finally:
            server.stop()


def note_markdown(title: str, body: str) -> str:
    return f"---\ntitle: {title}\ntype: concept\ntags: [test]\n---\n# {title}\n\n{body}\n"


# --------------------------------------------------------------------------- the server and its tools


def test_the_server_introduces_itself(mcp: Setup) -> None:
    init = mcp.server.init
    assert init is not None and init.serverInfo.name == "mindnet"
    assert init.instructions and "cite" in init.instructions
    assert init.capabilities.tools and init.capabilities.resources and init.capabilities.prompts


def test_lists_eight_tools_with_schemas_and_annotations(mcp: Setup) -> None:
    tools = {t.name: t for t in mcp.server.run(lambda s: s.list_tools()).tools}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for name, tool in tools.items():
        schema = tool.inputSchema
        assert schema["type"] == "object" and schema["properties"], name
        assert schema.get("additionalProperties") is False, name      # an unknown argument is refused
        assert tool.description and len(tool.description) > 80, name
        a = tool.annotations
        assert a is not None, name
        if name in WRITE_TOOLS:
            assert (a.readOnlyHint, a.destructiveHint) == (False, True), name
        else:
            assert a.readOnlyHint is True and a.destructiveHint is False, name
    assert tools["search"].inputSchema["required"] == ["query"]
    assert tools["search"].inputSchema["properties"]["top_k"]["maximum"] == 50
    assert set(tools["write_note"].inputSchema["properties"]) >= {"markdown", "overwrite", "replaces"}
    assert "version" in tools["append_to_note"].inputSchema["properties"]


def test_search_finds_the_qdrant_note_with_its_passage_and_why(mcp: Setup) -> None:
    found = mcp.server.ok("search", {"query": "Warum Qdrant?"})
    assert found["mode"] == "hybrid" and found["query_id"]
    paths = [h["path"] for h in found["hits"]]
    assert "concepts/qdrant.md" in paths[:3], paths
    hit = found["hits"][paths.index("concepts/qdrant.md")]
    assert "Qdrant" in hit["passage"] and len(hit["passage"]) <= 710
    assert hit["reason"] and hit["score"] > 0 and hit["type"] == "concept"
    assert [h["rank"] for h in found["hits"]] == list(range(1, len(paths) + 1))


def test_search_filters_by_type_and_folder(mcp: Setup) -> None:
    decisions = mcp.server.ok("search", {"query": "Qdrant", "types": ["decision"], "top_k": 5})
    assert decisions["hits"] and {h["type"] for h in decisions["hits"]} == {"decision"}
    concepts = mcp.server.ok("search", {"query": "Qdrant", "folder": "concepts/", "top_k": 5})
    assert concepts["hits"] and all(h["path"].startswith("concepts/") for h in concepts["hits"])


@pytest.mark.parametrize("ref", ["concepts/qdrant.md", "concepts/qdrant", "Qdrant", "Qdrant DB", "tool-qdrant"])
def test_read_note_by_path_title_alias_or_id(mcp: Setup, ref: str) -> None:
    note = mcp.server.ok("read_note", {"note": ref})
    assert (note["path"], note["note_id"], note["type"]) == ("concepts/qdrant.md", "tool-qdrant", "concept")
    raw = (mcp.vault / "concepts/qdrant.md").read_bytes()
    assert note["markdown"] == raw.decode("utf-8") and note["truncated"] is False
    assert note["version"] == safe_write.version_of(raw)
    assert "Qdrant DB" in note["aliases"] and "vektordatenbank" in note["tags"]
    assert note["frontmatter"]["id"] == "tool-qdrant"
    out = {link["path"] for link in note["links_out"] if link["resolved"]}
    assert "decisions/qdrant-statt-chroma.md" in out, note["links_out"]
    assert all(link["kind"] and link["written"] for link in note["links_out"])
    into = {link["path"] for link in note["links_in"]}
    assert "concepts/embeddings.md" in into, note["links_in"]


def test_read_note_cuts_at_max_chars_and_says_so(mcp: Setup) -> None:
    note = mcp.server.ok("read_note", {"note": "concepts/qdrant.md", "max_chars": 100})
    assert len(note["markdown"]) == 100 and note["truncated"] is True and note["chars"] > 100


def test_related_around_a_note(mcp: Setup) -> None:
    around = mcp.server.ok("related", {"note": "Qdrant", "depth": 1})
    assert around["start"] == ["concepts/qdrant.md"] and around["query_id"]
    distance = {n["path"]: n["distance"] for n in around["notes"]}
    assert distance["concepts/qdrant.md"] == 0
    assert distance["decisions/qdrant-statt-chroma.md"] == 1 and distance["concepts/embeddings.md"] == 1
    assert set(distance.values()) == {0, 1}
    edges = around["edges"]
    assert edges and all(e["kind"] and e["source"] in distance and e["target"] in distance for e in edges)
    assert any(e["source"] == "concepts/qdrant.md" and e["target"] == "decisions/qdrant-statt-chroma.md"
               for e in edges), edges


def test_related_follows_only_the_kinds_asked_for(mcp: Setup) -> None:
    around = mcp.server.ok("related", {"note": "Qdrant", "edge_kinds": ["references"]})
    assert around["edges"] and {e["kind"] for e in around["edges"]} == {"references"}
    text = mcp.server.refused("related", {"note": "Qdrant", "edge_kinds": ["loves"]})
    assert "'loves'" in text and "references" in text


def test_related_around_a_question(mcp: Setup) -> None:
    around = mcp.server.ok("related", {"query": "Warum Qdrant?", "depth": 1, "limit": 20})
    assert "concepts/qdrant.md" in around["start"] and around["query_id"]
    assert len(around["notes"]) <= 20
    starts = {n["path"] for n in around["notes"] if n["start"]}
    assert starts and starts <= set(around["start"])
    assert any(n["distance"] == 1 for n in around["notes"])
    text = mcp.server.refused("related", {})
    assert "`note`" in text and "`query`" in text


def test_suggest_links_for_a_note_by_the_rules(mcp: Setup) -> None:
    result = mcp.server.ok("suggest_links", {"note": "concepts/qdrant.md", "llm": False, "limit": 5})
    assert result["source"] == "concepts/qdrant.md" and result["query_id"]
    assert 0 < len(result["links"]) <= 5
    for link in result["links"]:
        assert link["path"] != "concepts/qdrant.md" and (mcp.vault / link["path"]).is_file()
        assert link["kind"] and 0 < link["confidence"] <= 1 and link["reason"]
        assert link["link"].startswith("[[") and link["link"].endswith("]]")
    assert result["llm"] in (None, False) or not result["llm"].get("used", False)


def test_suggest_links_for_a_draft_writes_nothing(mcp: Setup) -> None:
    before = sorted(p.relative_to(mcp.vault) for p in mcp.vault.rglob("*.md"))
    result = mcp.server.ok("suggest_links", {"text": "# Hybride Suche mit BM25\n\nBM25 und Embeddings zusammen."})
    assert result["source"] is None
    assert {"concepts/bm25.md", "concepts/hybride-suche.md"} <= {link["path"] for link in result["links"]}
    assert sorted(p.relative_to(mcp.vault) for p in mcp.vault.rglob("*.md")) == before


def test_recent_changes_lists_the_notes_newest_first(mcp: Setup) -> None:
    result = mcp.server.ok("recent_changes", {"since": "2000-01-01", "limit": 500})
    assert result["count"] >= 30 and len(result["notes"]) == result["count"] and result["importing"] is False
    assert "concepts/qdrant.md" in {n["path"] for n in result["notes"]}
    times = [n["updated"] for n in result["notes"]]
    assert all(times) and times == sorted(times, reverse=True)
    assert len(mcp.server.ok("recent_changes", {"since": "2000-01-01", "limit": 3})["notes"]) == 3
    assert "neither a time nor a span" in mcp.server.refused("recent_changes", {"since": "gestern"})


def test_resources_list_and_read_a_note(mcp: Setup) -> None:
    listed = mcp.server.run(lambda s: s.list_resources())
    by_uri = {str(r.uri): r for r in listed.resources}
    assert len(by_uri) >= 30 and "mindnet://note/concepts/qdrant.md" in by_uri
    assert by_uri["mindnet://note/concepts/qdrant.md"].mimeType == "text/markdown"
    read = mcp.server.run(lambda s: s.read_resource("mindnet://note/concepts/qdrant.md"))
    (content,) = read.contents
    assert isinstance(content, types.TextResourceContents) and content.mimeType == "text/markdown"
    assert content.text == (mcp.vault / "concepts/qdrant.md").read_text(encoding="utf-8")
    spaced = next(uri for uri in by_uri if "%20" in uri)         # a path with a space, quoted in the URI
    text = mcp.server.run(lambda s: s.read_resource(spaced)).contents[0].text
    assert text.startswith("---") or text.startswith("#")
    templates = mcp.server.run(lambda s: s.list_resource_templates()).resourceTemplates
    assert [t.uriTemplate for t in templates] == ["mindnet://note/{path}"]


def test_resources_outside_the_vault_are_refused(mcp: Setup) -> None:
    for uri in ("mindnet://note/..%2F..%2F..%2Fetc%2Fpasswd", "mindnet://note/nope.md", "file:///etc/passwd"):
        with pytest.raises(McpError) as info:
            mcp.server.run(lambda s, uri=uri: s.read_resource(uri))
        message = str(info.value)
        assert "no note" in message or "not a mindnet note" in message, message
        assert "root:" not in message and "Traceback" not in message


def test_the_answer_prompt(mcp: Setup) -> None:
    (prompt,) = mcp.server.run(lambda s: s.list_prompts()).prompts
    assert prompt.name == "answer_from_notes"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [("question", True)]
    got = mcp.server.run(lambda s: s.get_prompt("answer_from_notes", {"question": "Warum Qdrant?"}))
    (message,) = got.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    assert "Question: Warum Qdrant?" in message.content.text and "`search`" in message.content.text
    with pytest.raises(McpError, match="needs a question"):
        mcp.server.run(lambda s: s.get_prompt("answer_from_notes", {}))


# --------------------------------------------------------------------------- writing


def test_a_written_note_is_found_by_the_next_search(mcp: Setup) -> None:
    markdown = note_markdown("Zebrafink Beobachtung", "Der Zebrafink singt im Morgengrauen. Er nutzt [[Qdrant]].")
    written = mcp.server.ok("write_note", {"markdown": markdown})
    path = written["path"]
    assert path == "concepts/Zebrafink Beobachtung.md" and written["searchable"] is True
    text = (mcp.vault / path).read_text(encoding="utf-8")      # the frontmatter is normalised, the body kept
    assert "title: Zebrafink Beobachtung" in text and "Der Zebrafink singt im Morgengrauen." in text
    assert written["version"] == safe_write.version_of((mcp.vault / path).read_bytes())
    assert written["backup"] is None and written["import"]["new"] == 1
    assert {(link["written"], link["resolved"], link["path"]) for link in written["links_out"]} == \
        {("Qdrant", True, "concepts/qdrant.md")}
    found = mcp.server.ok("search", {"query": "Zebrafink singt im Morgengrauen"})
    assert found["hits"][0]["path"] == path, found["hits"][:3]
    assert mcp.server.ok("read_note", {"note": "Zebrafink Beobachtung"})["path"] == path
    qdrant = mcp.server.ok("read_note", {"note": "concepts/qdrant.md"})
    assert path in {link["path"] for link in qdrant["links_in"]}         # the graph knows the new link
    recent = mcp.server.ok("recent_changes", {"since": "30m"})
    assert path in {n["path"] for n in recent["notes"]}


def test_an_unresolved_link_in_a_new_note_is_named(mcp: Setup) -> None:
    written = mcp.server.ok("write_note", {"markdown": note_markdown(
        "Amsel Notiz", "Die Amsel singt abends; siehe [[Vogelstimmen Atlas]].")})
    assert [(link["written"], link["resolved"]) for link in written["links_out"]] == [("Vogelstimmen Atlas", False)]
    assert "Vogelstimmen Atlas" in written["hint"]


def test_overwrite_is_refused_without_the_version_then_done_with_it(mcp: Setup) -> None:
    first = mcp.server.ok("write_note", {"markdown": note_markdown("Kolibri Fakten", "Der Kolibri schwirrt.")})
    path = mcp.vault / first["path"]
    old = path.read_bytes()

    text = mcp.server.refused("write_note", {"markdown": note_markdown("Kolibri Fakten", "Zweite Fassung.")})
    assert first["version"] in text and "replaces" in text and "overwrite" in text
    assert str(mcp.root) not in text                        # the server's own folders are not shown
    assert path.read_bytes() == old

    stale = mcp.server.refused("write_note", {"markdown": note_markdown("Kolibri Fakten", "Dritte Fassung."),
                                              "overwrite": True, "replaces": "0" * 64})
    assert first["version"] in stale and path.read_bytes() == old

    replaced = mcp.server.ok("write_note", {"markdown": note_markdown("Kolibri Fakten", "Der Kolibri trinkt Nektar."),
                                            "overwrite": True, "replaces": first["version"]})
    assert replaced["path"] == first["path"] and replaced["version"] != first["version"]
    backup = mcp.vault / replaced["backup"]
    assert replaced["backup"].startswith(".mindnet/backups/") and backup.is_file()
    assert backup.read_bytes() == old
    assert "Nektar" in path.read_text(encoding="utf-8")
    hits = mcp.server.ok("search", {"query": "Kolibri trinkt Nektar"})["hits"]
    assert hits[0]["path"] == first["path"] and "Nektar" in hits[0]["passage"]


def test_append_needs_the_current_version(mcp: Setup) -> None:
    first = mcp.server.ok("write_note", {"markdown": note_markdown("Rotkehlchen", "Das Rotkehlchen ist zutraulich.")})
    path = mcp.vault / first["path"]
    version = mcp.server.ok("read_note", {"note": first["path"]})["version"]
    assert version == first["version"]
    before = path.read_bytes()

    appended = mcp.server.ok("append_to_note", {"note": "Rotkehlchen", "markdown": "Es singt auch im Winter.",
                                                "version": version})
    assert appended["path"] == first["path"] and appended["version"] != version
    assert path.read_text(encoding="utf-8").rstrip().endswith("Es singt auch im Winter.")
    assert (mcp.vault / appended["backup"]).read_bytes() == before
    assert path.read_bytes().startswith(before.rstrip(b"\n"))             # nothing else in it changed
    assert mcp.server.ok("search", {"query": "Rotkehlchen singt im Winter"})["hits"][0]["path"] == first["path"]

    now = path.read_bytes()
    text = mcp.server.refused("append_to_note", {"note": "Rotkehlchen", "markdown": "Veraltet.", "version": version})
    assert "changed since you read it" in text and appended["version"] in text and "read_note" in text
    assert path.read_bytes() == now


def test_add_links_writes_a_callout_and_names_close_titles_for_an_unknown_target(mcp: Setup) -> None:
    first = mcp.server.ok("write_note", {"markdown": note_markdown("Buchfink", "Der Buchfink schlägt laut.")})
    path = mcp.vault / first["path"]
    before = path.read_bytes()
    text = mcp.server.refused("add_links", {"note": first["path"],
                                            "links": [{"target": "Qdrant statt Chrma", "kind": "related_to"}]})
    assert "'Qdrant statt Chrma'" in text and "the closest notes" in text and "qdrant-statt-chroma" in text
    assert path.read_bytes() == before
    assert "'loves'" in mcp.server.refused("add_links", {"note": first["path"],
                                                         "links": [{"target": "BM25", "kind": "loves"}]})
    assert "the note itself" in mcp.server.refused("add_links", {"note": first["path"],
                                                                 "links": [{"target": "Buchfink"}]})

    added = mcp.server.ok("add_links", {"note": first["path"], "version": first["version"],
                                        "links": [{"target": "BM25", "kind": "related_to"},
                                                  {"target": "Qdrant DB", "kind": "references"}]})
    assert "> [!edge]" in added["appended"] and (mcp.vault / added["backup"]).read_bytes() == before
    assert path.read_text(encoding="utf-8").rstrip().endswith(added["appended"].rstrip())
    links = {(link["kind"], link["path"]) for link in mcp.server.ok("read_note", {"note": "Buchfink"})["links_out"]}
    assert {("related_to", "concepts/bm25.md"), ("references", "concepts/qdrant.md")} <= links


# --------------------------------------------------------------------------- bad input


def test_an_unknown_note_names_the_closest_titles(mcp: Setup) -> None:
    text = mcp.server.refused("read_note", {"note": "Qdrnt"})
    assert "no note is called 'Qdrnt'" in text and "the closest notes" in text and "'qdrant'" in text
    assert "closest" in mcp.server.refused("append_to_note", {"note": "Hybride Suhe", "markdown": "x"})


def test_empty_and_malformed_arguments_are_refused_by_name(mcp: Setup) -> None:
    assert mcp.server.refused("search", {"query": ""}) == "invalid arguments: query: must not be empty"
    assert mcp.server.refused("search", {}) == "invalid arguments: query is required"
    assert "top_k" in mcp.server.refused("search", {"query": "x", "top_k": "5"})
    assert "top_k" in mcp.server.refused("search", {"query": "x", "top_k": 500})
    assert "bogus" in mcp.server.refused("search", {"query": "x", "bogus": 1})
    assert "replaces" in mcp.server.refused("write_note", {"markdown": "# x", "replaces": "not-a-version"})
    text = mcp.server.refused("no_such_tool", {})
    assert "no tool 'no_such_tool'" in text and "search" in text


def test_paths_outside_the_vault_are_refused(mcp: Setup) -> None:
    outside = mcp.root.parent
    before = sorted(outside.iterdir())
    for ref in ("../../etc/passwd", "/etc/passwd", "concepts/../../../etc/passwd", "../../../../../../etc/hosts"):
        text = mcp.server.refused("read_note", {"note": ref})
        assert "root:" not in text and str(mcp.root) not in text, text
    text = mcp.server.refused("write_note", {"markdown": "---\ntitle: ../../evil\n---\n# ../../evil\n\nx\n"})
    assert "inside the vault" in text
    text = mcp.server.refused("write_note", {"markdown": "---\ntitle: /tmp/evil\n---\n# x\n"})
    assert "inside the vault" in text or "leading '/'" in text
    assert sorted(outside.iterdir()) == before and not list(mcp.root.glob("evil*"))
    found = mcp.server.ok("search", {"query": "Qdrant", "folder": "../../etc"})
    assert found["hits"] == [] and found["hint"]


def test_a_write_over_the_size_limit_is_refused_naming_the_limit(mcp: Setup) -> None:
    before = sorted(mcp.vault.rglob("*.md"))
    text = mcp.server.refused("write_note", {"markdown": "# Riesig\n\n" + "Wort " * 220_000})
    assert "200000 bytes" in text and "MINDNET_MCP_MAX_WRITE_BYTES" in text and "1100010" in text
    assert "MINDNET_MCP_MAX_WRITE_BYTES" in mcp.server.refused(
        "append_to_note", {"note": "concepts/qdrant.md", "markdown": "x" * 200_001})
    assert sorted(mcp.vault.rglob("*.md")) == before


# --------------------------------------------------------------------------- the log, the protocol


def test_tool_calls_go_to_the_search_history_as_mcp(mcp: Setup) -> None:
    ids = {
        "search": mcp.server.ok("search", {"query": "Periodisierung im Training"})["query_id"],
        "read_note": mcp.server.ok("read_note", {"note": "Qdrant"})["query_id"],
        "related": mcp.server.ok("related", {"note": "Qdrant"})["query_id"],
        "suggest_links": mcp.server.ok("suggest_links", {"note": "Qdrant"})["query_id"],
        "recent_changes": mcp.server.ok("recent_changes", {})["query_id"],
    }
    records = {r["query_id"]: r for r in mcp.history()}
    for tool, query_id in ids.items():
        assert query_id in records, tool
        record = records[query_id]
        assert record["source"] == "mcp", record
        assert record["mode"] == ("hybrid" if tool == "search" else tool)
    assert records[ids["search"]]["query_text"] == "Periodisierung im Training"
    assert records[ids["search"]]["hits"]
    assert records[ids["read_note"]]["hits"][0]["note_id"] == "tool-qdrant"
    assert records[ids["suggest_links"]]["query_text"] == "suggest_links Qdrant"


def test_stdout_carries_only_the_protocol_over_many_calls(mcp: Setup) -> None:
    for i in range(12):
        mcp.server.ok("search", {"query": f"Qdrant hybride Suche {i}", "top_k": 3})
        mcp.server.ok("read_note", {"note": "concepts/bm25.md", "max_chars": 200})
        mcp.server.refused("read_note", {"note": f"gibt es nicht {i}"})
    mcp.server.ok("write_note", {"markdown": note_markdown("Stieglitz", "Der Stieglitz frisst Distelsamen.")})
    mcp.server.ok("suggest_links", {"note": "Stieglitz"})
    assert mcp.server.stray == []                       # every line the server printed was a protocol message
    tools = mcp.server.run(lambda s: s.list_tools()).tools
    assert len(tools) == 8
    assert mcp.server.ok("search", {"query": "Stieglitz Distelsamen"})["hits"][0]["path"] == "concepts/Stieglitz.md"
    mcp.server.run(lambda s: s.send_ping())


# --------------------------------------------------------------------------- read-only


@pytest.mark.parametrize("how", ["env", "flag"])
def test_read_only_lists_only_the_read_tools_and_refuses_writes(tmp_path: Path, how: str) -> None:
    with FakeOllama() as ollama:
        env = imported_sample_vault(tmp_path, ollama.url)
        if how == "env":
            env["MINDNET_MCP_READ_ONLY"] = "1"
        server = StdioServer(tmp_path, env, *(["--read-only"] if how == "flag" else []), name=f"ro-{how}").start()
        try:
            tools = server.run(lambda s: s.list_tools()).tools
            assert {t.name for t in tools} == READ_TOOLS
            assert all(t.annotations and t.annotations.readOnlyHint for t in tools)
            before = sorted(tmp_path.joinpath("vault").rglob("*"))
            for name, args in (("write_note", {"markdown": note_markdown("Specht", "Der Specht klopft.")}),
                               ("append_to_note", {"note": "concepts/qdrant.md", "markdown": "x"}),
                               ("add_links", {"note": "concepts/qdrant.md", "links": [{"target": "BM25"}]})):
                text = server.refused(name, args)
                assert "read-only" in text and name in text, text
            assert sorted(tmp_path.joinpath("vault").rglob("*")) == before
            assert "concepts/qdrant.md" in {h["path"] for h in server.ok("search", {"query": "Warum Qdrant?"})["hits"]}
            assert server.ok("read_note", {"note": "Qdrant DB"})["path"] == "concepts/qdrant.md"
            assert server.stray == []
        finally:
            server.stop()
