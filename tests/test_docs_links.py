"""The README's, CONTRIBUTING's and docs/'s relative Markdown links point at files that exist, and their
#anchors at headings those files have (GitHub's heading ids)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mindnet.settings import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# written in parallel on another branch; a link to it is allowed before it lands
PENDING = {"docs/architecture.md"}
_FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!\\)!?\[[^\]\n]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans (whose brackets are no links)."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6} (.+)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [t for t in _LINK.findall(prose(path.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z]+:", t)]        # http:, https:, mailto: are not checked here


def test_slugs_follow_github() -> None:
    assert slug("MCP latency: `python -m benchmarks.bench_mcp`") == \
        "mcp-latency-python--m-benchmarksbench_mcp"
    assert slug("Save & Analyze") == "save--analyze"
    assert slug("analysis.yaml") == "analysisyaml"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO_ROOT).as_posix() for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        rel = dest.relative_to(REPO_ROOT).as_posix() if dest.is_relative_to(REPO_ROOT) else str(dest)
        if rel in PENDING:
            continue
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that id")
    assert not broken, broken


def test_the_docs_are_linked_from_the_readme() -> None:
    readme = set(links(REPO_ROOT / "README.md"))
    for page in PAGES[2:]:
        assert any(t.split("#")[0] == f"docs/{page.name}" for t in readme), page.name
