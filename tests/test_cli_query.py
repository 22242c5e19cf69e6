"""`mindnet query` in-process against a temp index and the fake Ollama embedding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from retrieval_fixtures import NoteSpec, Q, at_cos, build_index

from mindnet.cli import main
from mindnet.store.factory import open_folder

NOTES = [NoteSpec("a", [at_cos(0.9)], type="decision", path="decisions/a.md"),
         NoteSpec("b", [at_cos(0.7), at_cos(0.6)], path="concepts/b.md"),
         NoteSpec("c", [at_cos(0.5)], path="concepts/c.md")]


@pytest.fixture
def index_env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = open_folder(tmp_path / "qdrant", "t")
    build_index(store, NOTES)
    store.close()
    fake_ollama.embed_fn = lambda text: Q      # every query text points along the query axis
    env = {"QDRANT_PATH": tmp_path / "qdrant", "EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url,
           "COLLECTION_PREFIX": "t", "LOG_DIR": tmp_path / "logs", "CACHE_DIR": tmp_path / "cache",
           "QDRANT_URL": ""}
    for key, value in env.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    return tmp_path


def test_query_json_prints_query_id_and_hits(index_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", "what did I decide", "--mode", "semantic", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [h["note_id"] for h in data["hits"]] == ["a", "b", "c"]
    assert data["hits"][0]["score_breakdown"]["total"] == pytest.approx(1.0)   # the best cosine scales to 1
    assert data["hits"][0]["score_breakdown"]["dense"] == pytest.approx(0.9)
    logged = json.loads((index_env / "logs" / "search_history.jsonl").read_text())
    assert (logged["query_id"], logged["query_text"]) == (data["query_id"], "what did I decide")


@pytest.mark.parametrize(("args", "notes"), [
    (["--type", "decision"], ["a"]),
    (["--path-prefix", "concepts"], ["b", "c"]),
    (["--top-k", "1"], ["a"]),
])
def test_query_options_reach_the_request(index_env: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                         notes: list[str]) -> None:
    assert main(["query", "q", "--mode", "semantic", "--json", *args]) == 0
    assert [h["note_id"] for h in json.loads(capsys.readouterr().out)["hits"]] == notes


@pytest.mark.parametrize(("args", "hits"), [
    ([], ["a#c01", "b#c01", "c#c01"]),                       # distinct notes, b's second chunk as a passage
    (["--group", "chunk"], ["a#c01", "b#c01", "b#c02"]),
])
def test_query_groups_by_note_unless_asked_for_chunks(index_env: Path, capsys: pytest.CaptureFixture[str],
                                                      args: list[str], hits: list[str]) -> None:
    assert main(["query", "q", "--mode", "semantic", "--top-k", "3", "--json", *args]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [h["node_id"] for h in data["hits"]] == hits


def test_query_table_shows_the_passages_of_a_note(index_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", "q", "--mode", "semantic"]) == 0
    assert "concepts/b.md (+1 passage)\n" in capsys.readouterr().out


def test_query_can_run_twice_in_one_process(index_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", "q", "--json"]) == 0
    assert main(["query", "q", "--json"]) == 0


@pytest.mark.parametrize(("args", "field"), [
    (["   "], "query"), (["q", "--top-k", "-1"], "top_k"), (["q", "--expand-depth", "4"], "expand.depth"),
    (["q", "--edge-types", "likes"], "expand.edge_types"),
])
def test_bad_query_exits_2_naming_the_field(index_env: Path, capsys: pytest.CaptureFixture[str],
                                            args: list[str], field: str) -> None:
    assert main(["query", *args]) == 2
    assert f"error: {field}: " in capsys.readouterr().err
