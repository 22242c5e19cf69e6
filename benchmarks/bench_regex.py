"""Pathological-input benchmark for the regexes on user text: the patterns before issue 11 beside the code
that replaced them, on the inputs that froze the server, in one run (this machine is noisy, compare within a run).

    python -m benchmarks.bench_regex [--scale 1.0]

The old patterns are kept here only to measure against; `--scale` multiplies the input sizes (the old time
grows with the square or cube of it, the new one linearly).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from mindnet.chat import interview, sanitizer
from mindnet.indexing import sparse
from mindnet.vault.headings import first_h1, parse_heading

OLD = {
    "heading": re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$"),
    "h1": re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE),
    "html": re.compile(r"</?[a-zA-Z][^>\n]*>"),
    "link": re.compile(r"\]\([^)\s]*\)"),
    "key": re.compile(r"^[ \t]*-?[ \t]*(?P<key>[^\s:#\-\[\]{}][^:]*?)[ \t]*:(?:[ \t]+(?P<value>.*))?[ \t]*$"),
    "fence": re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$"),
    "note_block": re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(markdown|md|yaml|yml)?[ \t]*\n\s*---[ \t]*$", re.M | re.I),
}


def _seconds(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def cases(scale: float) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    n = int(1200 * scale)
    heading = "# Titel" + " " * n + "x"
    tags = "<a<a\u2039a" * int(4000 * scale)
    links = "](" * int(10_000 * scale)
    key = " " * int(20_000 * scale) + ":"
    fence = "```" + " " * int(20_000 * scale) + "`"
    return [
        (f"chunker heading, {n} spaces", lambda: OLD["heading"].match(heading), lambda: parse_heading(heading)),
        (f"note title (H1), {n} spaces", lambda: OLD["h1"].search(heading), lambda: first_h1(heading)),
        (f"BM25 tags <a<a\u2039a, {len(tags) // 1000} K chars", lambda: OLD["html"].sub(" ", tags),
         lambda: sparse._HTML_TAG.sub(" ", tags)),
        (f"BM25 link targets ](, {len(links) // 1000} K chars", lambda: OLD["link"].sub(" ", links),
         lambda: sparse._LINK_TARGET.sub(" ", links)),
        (f"draft key line, {len(key) // 1000} K blanks", lambda: OLD["key"].match(key),
         lambda: sanitizer._KEY_LINE.match(key)),
        (f"draft fence line, {len(fence) // 1000} K blanks", lambda: OLD["fence"].match(fence),
         lambda: sanitizer._FENCE.match(fence)),
        (f"interview note block, {len(fence) // 1000} K blanks", lambda: OLD["note_block"].search(fence),
         lambda: interview._NOTE_BLOCK.search(fence)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the input sizes")
    args = parser.parse_args(argv)
    print(f"{'input':40s} {'old s':>9s} {'new s':>10s} {'old/new':>9s}")
    for name, old, new in cases(args.scale):
        before, after = _seconds(old), _seconds(new)
        print(f"{name:40s} {before:9.3f} {after:10.5f} {before / max(after, 1e-9):9.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
