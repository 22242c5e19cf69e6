"""`mindnet eval --vault`: a real vault imported with its own types and links, questions from a file or built
from the vault (`--make-queries`), note-level figures per mode beside the plain retriever."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers_vault import TYPES_YAML, load_types, write_vault

from mindnet.cli import main
from mindnet.errors import VaultError
from mindnet.evaluation.vault_queries import gold_qrels, load_questions, make_questions

WORDS = ["apple", "banana", "cherry", "orchard", "tropical", "stone"]
VAULT = {
    "fruit/apple.md": "---\ntitle: Apple\ndescription: crisp orchard apple\n---\n# Apple\n\napple apple orchard",
    "fruit/banana.md": "---\nid: banana\ntitle: Banana\naliases: [tropical banana]\n---\n# Banana\n\n"
                       "banana tropical yellow",
    "fruit/cherry.md": "# Cherry\n\nA cherry is a small stone fruit with a pit.\n\nMore on cherry later.",
    "index.md": "# Index\n\n[[Apple]] [[Banana]] [[Cherry]]",
}


def fruit_embedding(text: str) -> list[float]:
    words = text.lower().replace(":", " ").replace(".", " ").split()
    vec = [float(words.count(w)) for w in WORDS] + [1e-3] * 58
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec]


@pytest.fixture
def env(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_ollama.embed_fn = fruit_embedding
    for key, value in {"EMBEDDING": "ollama", "OLLAMA_URL": fake_ollama.url, "QDRANT_PATH": tmp_path / "qdrant",
                       "CACHE_DIR": tmp_path / "cache", "COLLECTION_PREFIX": "t", "TYPES_CONFIG": TYPES_YAML,
                       "QDRANT_URL": ""}.items():
        monkeypatch.setenv(f"MINDNET_{key}", str(value))
    return write_vault(tmp_path / "vault", VAULT)


def test_make_queries_uses_description_aliases_and_the_first_sentence_with_the_title_masked(env) -> None:
    questions = make_questions(env, load_types())
    assert [(q.id, q.text, q.gold_paths) for q in questions] == [
        ("fruit/apple#q1", "crisp orchard apple", ["fruit/apple.md"]),
        ("fruit/banana#q1", "tropical banana", ["fruit/banana.md"]),
        ("fruit/cherry#q1", "A ___ is a small stone fruit with a pit.", ["fruit/cherry.md"]),
    ]                                   # index.md, a list of links, gives none


def test_eval_vault_with_make_queries_writes_the_set_and_reports_every_mode(env, tmp_path, capsys) -> None:
    out = tmp_path / "q.jsonl"
    assert main(["eval", "--vault", str(env), "--make-queries", str(out), "--work-dir", str(tmp_path / "w"),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [json.loads(line)["_id"] for line in out.read_text().splitlines()] == [
        "fruit/apple#q1", "fruit/banana#q1", "fruit/cherry#q1"]
    assert (data["docs"], data["queries"], data["skipped"]) == (4, 3, {"index notes": 1})
    assert list(data["modes"]) == ["semantic", "hybrid-d0", "hybrid-d1", "hybrid-d2", "plain"]
    for mode, figures in data["modes"].items():
        assert figures["mrr@10"] == 1.0, mode         # each question names its note's own words
        assert figures["dup@5"] == 0.0 or mode == "plain"
        assert figures["latency_ms"]["median"] > 0


def test_eval_vault_make_queries_says_how_many_notes_it_skipped_and_why(env, tmp_path, capsys) -> None:
    out = tmp_path / "q.jsonl"
    assert main(["eval", "--vault", str(env), "--make-queries", str(out), "--modes", "semantic",
                 "--work-dir", str(tmp_path / "w")]) == 0
    printed = " ".join(capsys.readouterr().out.split())          # the console wraps long lines
    assert "wrote 3 questions to" in printed and "q.jsonl; skipped index notes: 1" in printed


def test_eval_vault_with_a_questions_file_and_gold_ids(env, tmp_path, capsys) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"_id": "x", "text": "yellow banana", "gold_ids": ["banana"]}) + "\n"
                     + json.dumps({"_id": "y", "text": "orchard", "gold_paths": ["fruit/cherry.md"]}) + "\n")
    assert main(["eval", "--vault", str(env), "--queries", str(qfile), "--modes", "semantic",
                 "--work-dir", str(tmp_path / "w"), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["modes"]["semantic"]
    assert (figures["recall@1"], figures["mrr@10"] < 1.0) == (0.5, True)


@pytest.mark.parametrize(("line", "message"), [
    ('{"_id": "a", "text": "x"}', "no gold notes"),
    ('{"_id": "a", "text": "", "gold_paths": ["a.md"]}', "field 'text'"),
    ('{"_id": "a", "text": "x", "gold_paths": "a.md", "gold_ids": [1]}', "field 'gold_ids'"),
    ('[1]', "expected a JSON object"),
])
def test_a_bad_question_line_names_file_line_and_field(tmp_path, line: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"_id": "ok", "text": "fine", "gold_paths": ["a.md"]}\n' + line + "\n")
    with pytest.raises(VaultError, match=message) as info:
        load_questions(path)
    assert ":2" in str(info.value) and "q.jsonl" in str(info.value)


def test_a_gold_path_that_is_no_note_is_an_error(tmp_path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"_id": "q", "text": "x", "gold_paths": ["missing.md"]}\n')
    with pytest.raises(VaultError, match="gold path 'missing.md' is not an imported note"):
        gold_qrels(load_questions(path), {"a.md": "a"}, str(path))


def test_eval_vault_needs_exactly_one_question_source(env, capsys) -> None:
    assert main(["eval", "--vault", str(env)]) == 2
    assert "exactly one of --queries" in capsys.readouterr().err
