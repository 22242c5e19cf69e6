"""The stage order of docs/architecture.md holds in the code: no import goes up a stage, no import cycle
among module-level imports, and a module over 400 lines says why (`Over 400 lines:` in its docstring).

Imports are read with `ast`, not by importing: module-level imports and imports inside functions both count
as dependencies; imports under `if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mindnet"
DOC = ROOT / "docs" / "architecture.md"
MAX_LINES = 400
REASON = "Over 400 lines:"

# cycles allowed because they run only through an import inside a function (none left: add one only with its reason)
KNOWN_LAZY_CYCLES: list[list[str]] = []


@dataclass(frozen=True)
class Import:
    target: str        # the mindnet module imported, as a path relative to ROOT ("mindnet/store/engine.py")
    line: int
    module_level: bool


def module_paths() -> list[str]:
    paths = sorted(p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py"))
    return paths


def _dotted(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_index() -> dict[str, str]:
    """Dotted name -> path, for every module under mindnet/ (the moving ones too, so imports of them resolve)."""
    return {_dotted(p.relative_to(ROOT).as_posix()): p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")}


def _resolve(name: str, index: dict[str, str]) -> str | None:
    while name:
        if name in index:
            return index[name]
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: str, source: str, index: dict[str, str]) -> list[Import]:
    """The mindnet modules `source` (the file at `path`) imports, at module level or not.

    The bodies of `if TYPE_CHECKING:` are skipped; its `else:` is kept."""
    dotted = _dotted(path)
    package = dotted.split(".") if path.endswith("__init__.py") else dotted.split(".")[:-1]
    found: list[Import] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [t for a in node.names if (t := _resolve(a.name, index))]
        base = node.module or ""
        if node.level:
            anchor = package[: len(package) - (node.level - 1)]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
        # `from mindnet.store import engine` imports the submodule, `from mindnet.store.engine import Store` the module
        return [t for a in node.names if (t := index.get(f"{base}.{a.name}") or _resolve(base, index))]

    def visit(node: ast.AST, module_level: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.extend(Import(t, node.lineno, module_level) for t in targets(node))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, module_level)
        else:
            inner = module_level and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

    visit(ast.parse(source), True)
    return [i for i in found if i.target != path]


def import_graph() -> dict[str, list[Import]]:
    index = _module_index()
    return {path: imports_of(path, (ROOT / path).read_text(encoding="utf-8"), index) for path in module_paths()}


def stage_order(text: str) -> list[tuple[str, list[str]]]:
    """The fenced ```stages block of docs/architecture.md: `name: entry entry ...`, lowest stage first."""
    match = re.search(r"^```stages\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert match, f"{DOC}: no ```stages block in the 'Stage order' section"
    stages = []
    for line in match.group(1).splitlines():
        if line.strip():
            name, _, entries = line.partition(":")
            stages.append((name.strip(), entries.split()))
    return stages


def stage_of(path: str, stages: list[tuple[str, list[str]]]) -> int | None:
    """The stage (its position, lowest 0) of the longest entry matching `path`."""
    best: tuple[int, int] | None = None
    for rank, (_, entries) in enumerate(stages):
        for entry in entries:
            if path == entry or (entry.endswith("/") and path.startswith(entry)):
                if best is None or len(entry) > best[0]:
                    best = (len(entry), rank)
    return best[1] if best else None


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


# --------------------------------------------------------------------------- the checks


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Import]]:
    return import_graph()


@pytest.fixture(scope="module")
def stages() -> list[tuple[str, list[str]]]:
    return stage_order(DOC.read_text(encoding="utf-8"))


def test_no_import_cycle_among_module_level_imports(graph: dict[str, list[Import]]) -> None:
    module_level = {path: sorted({i.target for i in imps if i.module_level}) for path, imps in graph.items()}
    found = cycles(module_level)
    assert found == [], "import cycles among module-level imports:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_cycle_even_through_function_imports(graph: dict[str, list[Import]]) -> None:
    every = {path: sorted({i.target for i in imps}) for path, imps in graph.items()}
    found = [c for c in cycles(every) if c not in KNOWN_LAZY_CYCLES]
    shown = "\n".join(" <-> ".join(c) for c in found)
    assert found == [], f"import cycles (imports inside functions counted):\n{shown}"


def test_every_module_has_a_stage(graph: dict[str, list[Import]], stages: list[tuple[str, list[str]]]) -> None:
    unplaced = [path for path in graph if stage_of(path, stages) is None]
    assert unplaced == [], f"modules with no stage in {DOC.name}: {unplaced}"


def test_every_stage_entry_names_an_existing_module(stages: list[tuple[str, list[str]]]) -> None:
    paths = [p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")]
    missing = [e for _, entries in stages for e in entries
               if not any(p == e or (e.endswith("/") and p.startswith(e)) for p in paths)]
    assert missing == [], f"{DOC.name} names modules that do not exist: {missing}"


def test_no_import_from_a_higher_stage(graph: dict[str, list[Import]], stages: list[tuple[str, list[str]]]) -> None:
    names = [name for name, _ in stages]
    upward = []
    for path, imps in graph.items():
        own = stage_of(path, stages)
        for imp in imps:
            theirs = stage_of(imp.target, stages)
            if own is not None and theirs is not None and theirs > own:
                upward.append(f"{path}:{imp.line} ({names[own]}) imports {imp.target} ({names[theirs]})")
    assert upward == [], "imports from a higher stage:\n" + "\n".join(upward)


def test_long_modules_say_why(graph: dict[str, list[Import]]) -> None:
    unexplained = []
    for path in graph:
        text = (ROOT / path).read_text(encoding="utf-8")
        lines = text.count("\n") + (not text.endswith("\n") and bool(text))
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_LINES and not any(line.startswith(REASON) for line in docstring.splitlines()):
            unexplained.append(f"{path} ({lines} lines)")
    assert unexplained == [], f"modules over {MAX_LINES} lines with no '{REASON}' line in their docstring:\n" + (
        "\n".join(unexplained))


# --------------------------------------------------------------------------- the checks can fail


def test_a_cycle_is_found() -> None:
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


def test_imports_under_type_checking_are_skipped_and_function_imports_kept() -> None:
    source = ("from typing import TYPE_CHECKING\nfrom mindnet.errors import MindnetError\n"
              "if TYPE_CHECKING:\n    from mindnet.service import Mindnet\n"
              "def f():\n    from mindnet.store import engine\n    from . import x\n")
    index = {"mindnet.errors": "mindnet/errors.py", "mindnet.service": "mindnet/service.py",
             "mindnet.store": "mindnet/store/__init__.py", "mindnet.store.engine": "mindnet/store/engine.py",
             "mindnet.store.x": "mindnet/store/x.py"}
    assert imports_of("mindnet/store/probe.py", source, index) == [
        Import("mindnet/errors.py", 2, True), Import("mindnet/store/engine.py", 6, False),
        Import("mindnet/store/x.py", 7, False)]


def test_the_longest_stage_entry_decides() -> None:
    stages = [("low", ["mindnet/indexing/chunk_text.py"]), ("high", ["mindnet/indexing/"])]
    assert [stage_of(p, stages) for p in ("mindnet/indexing/chunk_text.py", "mindnet/indexing/pipeline.py",
                                          "mindnet/cli.py")] == [0, 1, None]
