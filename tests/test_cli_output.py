"""The command line's human output at 80 columns (issue 25, item 4): `query` with excerpts and the question's words
marked, `eval` in one table with every number whole, `check` naming each problem, `suggest` without Python reprs,
counts in words ("1 passage"). A small real vault is imported once through the CLI with the fake Ollama."""

from __future__ import annotations

import copy
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_ollama import FakeOllama
from helpers_vault import TYPES_YAML, write_vault
from rich.console import Console

from mindnet.cli import main
from mindnet.commands import eval as eval_command
from mindnet.commands import index, query, suggest

WIDTH = 80
PRINTING = (index, query, eval_command, suggest)     # the command modules run here, each printing to its `console`
LONG_DIR = "archive/2024/some-very-long-folder-name/another-rather-long-subfolder/and-one-more"
QDRANT_LONG = " ".join(
    f"Qdrant speichert Vektoren mit Payload im Abschnitt {i}, und die Vektordatenbank filtert danach schnell."
    for i in range(26))      # about 360 words: two chunks (medium profile), one passage beside the best
MISSING = 25
VAULT = {
    "concepts/qdrant.md": "---\nid: qdrant\n---\n# Qdrant\n\n" + QDRANT_LONG + "\n",
    "concepts/bm25.md": "---\nid: bm25\n---\n# BM25\n\nBM25 gewichtet Terme im Korpus. Das hilft der Suche nach "
                        "seltenen Namen, die ein Embedding verwischt. Siehe [[Qdrant]].\n",
    "notes/a.md": "# A\n\nDie Vektordatenbank [red]speichert[/red] Payload als Text, kein Markup. Mehr dazu in "
                  "[[Foo Bar]] und [[Qdrant]].\n",
    "notes/many.md": "# Many\n\nLinks, die es noch nicht gibt: "
                     + " ".join(f"[[Missing {i}]]" for i in range(1, MISSING + 1)) + "\n",
    f"{LONG_DIR}/qdrant notes from the meeting.md": "# Meeting\n\nWir haben Qdrant als Vektordatenbank "
                                                    "beschlossen, mit Payload-Filtern.\n",
    "projects/suche.md": "---\nid: suche\n---\n# Suche\n\nDie Suche hängt ab von [[Qdrant]] und nutzt [[BM25]] "
                         "für Payload und Vektoren.\n",
}


def use_console(mp: pytest.MonkeyPatch, console: Console) -> None:
    """Every command prints to `console` (patched where the commands look it up, not in mindnet.cli)."""
    for module in PRINTING:
        mp.setattr(module, "console", console)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The vault above imported once (`mindnet ingest`), the environment pointing every command at it."""
    tmp = tmp_path_factory.mktemp("cli_output")
    server = FakeOllama().start()
    env = {"MINDNET_EMBEDDING": "ollama", "MINDNET_OLLAMA_URL": server.url, "MINDNET_QDRANT_PATH": tmp / "qdrant",
           "MINDNET_CACHE_DIR": tmp / "cache", "MINDNET_COLLECTION_PREFIX": "t", "MINDNET_TYPES_CONFIG": TYPES_YAML,
           "MINDNET_QDRANT_URL": "", "MINDNET_VAULT_ROOT": tmp / "vault", "MINDNET_LOG_DIR": tmp / "logs",
           "NO_PROXY": ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY")]))}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, str(value))
        mp.setenv("no_proxy", env["NO_PROXY"])
        mp.delenv("OLLAMA_API_KEY", raising=False)
        write_vault(tmp / "vault", VAULT)
        use_console(mp, Console(file=io.StringIO(), width=WIDTH))
        assert main(["ingest", "--json"]) == 0
        try:
            yield tmp
        finally:
            server.stop()


@pytest.fixture
def out(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Console:
    """The console the CLI prints to: 80 columns, recorded."""
    console = Console(file=io.StringIO(), width=WIDTH, record=True, color_system="standard", force_terminal=True)
    use_console(monkeypatch, console)
    return console


def lines_of(console: Console) -> list[str]:
    return console.export_text(styles=False).splitlines()


def assert_fits(lines: list[str]) -> None:
    too_long = [line for line in lines if len(line) > WIDTH]
    assert not too_long, too_long


# ---------------------------------------------------------------------------- query


def test_query_shows_an_excerpt_per_hit_with_the_question_words_in_bold(out: Console) -> None:
    assert main(["query", "Welche Vektordatenbank speichert Payload?", "--top-k", "5"]) == 0
    styled = out.export_text(styles=True, clear=False)
    lines = lines_of(out)
    assert_fits(lines)
    assert len(lines) <= 30, "\n".join(lines)               # 5 hits in about 30 lines, not 70
    assert "5 hits" in lines[0]
    text = "\n".join(lines)
    assert "Qdrant speichert Vektoren mit Payload" in text       # the text itself, not only titles
    assert re.search(r"\x1b\[1m(\x1b\[[0-9;]*m)*Vektordatenbank", styled), styled   # the matched word in bold
    assert "[red]speichert[/red] Payload" in text                          # note text is never parsed as markup


def test_query_shortens_a_long_path_at_slashes_and_keeps_the_file_name(out: Console) -> None:
    assert main(["query", "Meeting Qdrant Vektordatenbank beschlossen", "--top-k", "5"]) == 0
    lines = lines_of(out)
    assert_fits(lines)
    full = f"{LONG_DIR}/qdrant notes from the meeting.md"
    shown = [re.sub(r" \(\+\d+ passages?\)$", "", line.strip()) for line in lines if "meeting.md" in line]
    assert len(shown) == 1, lines                      # on one line, not folded mid-word
    assert shown[0] == full or (shown[0].startswith("…/") and full.endswith(shown[0][1:])), shown


def test_query_explain_adds_the_score_terms_and_the_reasons_in_words(out: Console) -> None:
    assert main(["query", "Qdrant Payload", "--top-k", "3", "--explain"]) == 0
    lines = lines_of(out)
    assert_fits(lines)
    text = " ".join(" ".join(lines).split())
    assert re.search(r"sem \d\.\d{3} \(type x\d\.\d{2}\) \+ edge \d\.\d{3} \(bonus \d\.\d{2}\) \+ cent \d\.\d{3} "
                     r"= \d\.\d{3}", text), text
    assert "why: matches your question (similarity" in text       # plain_reasons, as the chat UI shows them


def test_query_counts_passages_in_words(out: Console) -> None:
    assert main(["query", "Qdrant speichert Vektoren", "--top-k", "5"]) == 0
    text = "\n".join(lines_of(out))
    assert "(+1 passage)" in text and "passages)" not in text, text


# ---------------------------------------------------------------------------- eval


@pytest.fixture(scope="module")
def eval_data(vault: Path) -> dict:
    console = Console(file=io.StringIO(), width=WIDTH)
    with pytest.MonkeyPatch.context() as mp:
        use_console(mp, console)
        buffer = io.StringIO()
        mp.setattr("sys.stdout", buffer)
        assert main(["eval", "--vault", str(vault / "vault"), "--make-queries", str(vault / "q.jsonl"),
                     "--work-dir", str(vault / "eval"), "--json"]) == 0
    return json.loads(buffer.getvalue())


def eval_rows(lines: list[str]) -> list[list[str]]:
    """The table's rows: a mode, then figures (a legend line may start with a mode's name too)."""
    return [cells for cells in map(str.split, lines)
            if len(cells) > 2 and cells[0] in ("sem", "d0", "d1", "d2", "plain") and cells[1][:1].isdigit()]


def test_eval_prints_one_table_of_short_mode_names_and_whole_numbers_at_80_columns(out: Console,
                                                                                  eval_data: dict) -> None:
    slow = copy.deepcopy(eval_data)     # latencies of a big vault: numbers stay whole too
    for m in slow["modes"].values():
        m["latency_ms"] = {"median": 12345.6, "p95": 98765.4}
    for data in (eval_data, slow):
        eval_command.render_eval(data)
    lines = lines_of(out)
    assert_fits(lines)
    rows = eval_rows(lines)
    assert [r[0] for r in rows] == ["sem", "d0", "d1", "d2", "plain"] * 2
    for row in rows:
        assert all(re.fullmatch(r"\d+(\.\d+)?", cell) for cell in row[1:]), row    # no "0.9…", no "semant…"
    assert len(rows[0]) == 1 + len(eval_data["modes"]["semantic"]) - 2 + 3        # every metric, 3 latency columns
    text = " ".join(" ".join(lines).split())
    assert "d0, d1, d2 = hybrid" in text and "plain = " in text                   # the legend
    assert "{'" not in text and "{" not in text                                     # edges by kind in words


# ---------------------------------------------------------------------------- check


def test_check_names_each_unresolved_link_up_to_20_and_all_with_verbose(out: Console) -> None:
    assert main(["check"]) == 0
    lines = lines_of(out)
    assert_fits(lines)
    assert "unresolved link in notes/a.md: [[Foo Bar]]" in lines
    named = [line for line in lines if line.startswith("unresolved link in ")]
    assert len(named) == 20
    assert f"... and {MISSING + 1 - 20} more (--verbose for all)" in lines
    out.export_text()                  # clears the record
    assert main(["check", "--verbose"]) == 0
    lines = lines_of(out)
    assert len([line for line in lines if line.startswith("unresolved link in ")]) == MISSING + 1
    assert "unresolved link in notes/many.md: [[Missing 25]]" in lines and "index OK" in lines


# ---------------------------------------------------------------------------- suggest


def test_suggest_says_the_llm_status_in_words_and_counts_right(out: Console) -> None:
    assert main(["suggest", "notes/a.md", "--no-llm"]) == 0
    lines = lines_of(out)
    assert_fits(lines)
    text = " ".join(" ".join(lines).split())
    assert "{'" not in text and "'used'" not in text, text
    assert "LLM: not used (off in this request)" in text
    assert "notes/a.md: 1 chunk," in text, text


def test_plural_counts_in_words() -> None:
    from mindnet.cli_render import plural
    assert [plural(1, "passage"), plural(2, "passage"), plural(0, "note")] == ["1 passage", "2 passages", "0 notes"]
    assert [plural(1, "query", "queries"), plural(3, "query", "queries")] == ["1 query", "3 queries"]
