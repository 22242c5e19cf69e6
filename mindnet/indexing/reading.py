"""Reading and chunking a large vault in worker processes, one per core.

A note is read, parsed and chunked on its own (its links wait for the whole vault), and that work was about
a third of a first import's own time, done on one core of two. For a vault of `POOL_MIN_NOTES` files or more
the import hands the paths to a process pool in batches and takes the results back in path order, so the
report, the duplicate-id rule and the notes' order are those of reading them one by one. Workers start from a
fresh interpreter ("forkserver": a server process has threads, and forking one is unsafe), which costs about
two seconds, hence the threshold. A worker that dies (killed, out of memory) costs nothing: the main process
reads what is left itself. A worker ends with the import that started it: killed (kill -9, out of memory)
the import leaves no worker waiting forever to hand back a result nobody reads.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.settings import TypesConfig
from mindnet.vault.budget import within_budget
from mindnet.vault.note import Note, budget_warning, cut_note
from mindnet.vault.scan import Issue, load_note

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

    from mindnet.indexing.node_parser import MarkdownNoteParser

log = logging.getLogger(__name__)

__all__ = ["POOL_MIN_NOTES", "Loaded", "chunk_note", "read_notes", "workers"]

POOL_MIN_NOTES = 1000
BATCH = 64                  # files per task: one round trip per batch, results kept in order
MAX_WORKERS = 4

# a file read: the note (None: left out) with its report lines, and its chunks (None: chunked by the caller)
Loaded = tuple[Note | None, list[Issue], "list[TextNode] | None"]


def workers() -> int:
    """Worker processes for this machine (the cores this process may use, at most MAX_WORKERS)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:       # macOS, Windows
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def read_notes(root: Path, paths: Iterable[Path], types: TypesConfig, parser: MarkdownNoteParser
               ) -> Iterator[Loaded]:
    """Each of `paths` read (and, in a pool, chunked), in the order given."""
    paths = list(paths)
    if len(paths) < POOL_MIN_NOTES or workers() < 2:
        for path in paths:
            note, problems = load_note(root, path, types)
            yield note, problems, None
        return
    yield from _pooled(root, paths, types, parser)


def _pooled(root: Path, paths: list[Path], types: TypesConfig, parser: MarkdownNoteParser) -> Iterator[Loaded]:
    done = 0
    try:
        with ProcessPoolExecutor(workers(), mp_context=multiprocessing.get_context("forkserver"),
                                 initializer=_start, initargs=(str(root), types, parser)) as pool:
            batches = [[str(p) for p in paths[i:i + BATCH]] for i in range(0, len(paths), BATCH)]
            for batch in pool.map(_read_batch, batches):
                for loaded in batch:
                    done += 1
                    yield loaded
    except BrokenProcessPool as exc:
        log.warning("a worker reading notes stopped (%s); reading the remaining %d notes here", exc,
                    len(paths) - done)
        for path in paths[done:]:
            note, problems = load_note(root, path, types)
            yield note, problems, None


# ------------------------------------------------------------------------------------------- in the worker

def chunk_note(note: Note, parser: MarkdownNoteParser, types: TypesConfig, issues: list[Issue]
               ) -> tuple[Note, list[TextNode]]:
    """A note's chunks within the per-note budget (past it: the note cut where chunking got to, with a report
    line), before any note is linked: links to its headings target the chunks it gets here."""
    def attempt(lines: int | None) -> tuple[Note, list[TextNode]]:
        cut = note if lines is None else cut_note(note, lines, types)
        return cut, parser.note_to_nodes(cut)

    (cut, nodes), kept = within_budget(types.note_budget_seconds, attempt)
    if kept is not None:
        issues.append(Issue("warning", note.path, budget_warning("chunking", types, kept, note.body.count("\n") + 1),
                            note.body_line + kept))
    return cut, nodes


_worker: dict = {}


def _start(root: str, types: TypesConfig, parser: MarkdownNoteParser) -> None:
    _worker.update(root=Path(root), types=types, parser=parser)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent.sentinel,), name="mindnet-reader-parent", daemon=True).start()


def _end_with(sentinel: int) -> None:
    """End this worker when the import that started it ends without shutting the pool down (killed). The
    worker holds both ends of the pool's pipes, so it never sees them close: it would wait forever for a task
    or to hand back its result, and keep the forkserver alive with it."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _read_batch(paths: list[str]) -> list[Loaded]:
    root, types, parser = _worker["root"], _worker["types"], _worker["parser"]
    out: list[Loaded] = []
    for path in paths:
        note, problems = load_note(root, Path(path), types)
        if note is None:
            out.append((None, problems, None))
            continue
        try:
            note, nodes = chunk_note(note, parser, types, problems)
        except Exception:  # noqa: BLE001 - the main process chunks it again and reports what it finds
            log.exception("chunking %s in a worker failed", path)
            out.append((note, problems, None))
            continue
        out.append((note, problems, nodes))
    return out
