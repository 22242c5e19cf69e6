"""Every Python block of the README runs, as written, against the sample vault and the fake Ollama.

The only change made to a block is the Ollama address: `http://127.0.0.1:11434` (Ollama's own) becomes the
fake server's. Blocks run in a working folder holding the index that `MINDNET_EMBEDDING=ollama mindnet ingest`
builds from the sample vault, as the README says. Shell blocks are not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_ollama import FakeOllama

from mindnet.service import Mindnet
from mindnet.settings import REPO_ROOT, SAMPLE_VAULT, Settings

README = REPO_ROOT / "README.md"
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_shows_the_three_library_parts() -> None:
    code = "\n".join(c for _, c in BLOCKS)
    used = {name: name in code for name in ("MarkdownNoteParser()", "VectorStoreIndex", "RetrieverQueryEngine",
                                            "MindnetRetriever.from_env()", "MindnetRetriever.open(",
                                            "MindnetScorer(", "VectorIndexRetriever", "QueryFusionRetriever")}
    assert all(used.values()), used


def test_block_extraction_finds_python_fences_only() -> None:
    text = "x\n```bash\nls\n```\n```python\nprint(1)\n```\n"
    assert python_blocks(text) == [(5, "print(1)\n")]


@pytest.fixture
def indexed_folder(tmp_path: Path, fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with ./data/qdrant imported from the sample vault through the fake Ollama."""
    monkeypatch.chdir(tmp_path)
    for name in [k for k in __import__("os").environ if k.startswith("MINDNET_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MINDNET_EMBEDDING", "ollama")
    monkeypatch.setenv("MINDNET_OLLAMA_URL", fake_ollama.url)
    app = Mindnet(Settings.from_env())
    try:
        report = app.ingest(SAMPLE_VAULT)
    finally:
        app.close()
    assert report.notes > 20
    return tmp_path


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_python_block_runs(line: int, code: str, indexed_folder: Path, fake_ollama: FakeOllama,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    source = code.replace(OLLAMA_DEFAULT, fake_ollama.url)
    exec(compile(source, f"README.md:{line}", "exec"), {"__name__": "__readme__"})   # noqa: S102
    out = capsys.readouterr().out
    assert out.strip(), "the block printed nothing"
    if "Ollama(" in code or "OllamaEmbedding(" in code:
        assert fake_ollama.count("/api/embed") > 0, "the block never reached the (fake) Ollama"
    if "RetrieverQueryEngine" in code:
        assert "Antwort:" in out and fake_ollama.count("/api/chat") >= 1   # the LLM's answer was printed


def test_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 3
