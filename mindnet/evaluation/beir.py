"""Load a retrieval benchmark in BEIR layout and write its corpus as a Markdown vault.

Layout: ``corpus.jsonl`` ({"_id", "title", "text"}), ``queries.jsonl`` ({"_id", "text", ...}) and qrels as TSV
with a header line (``query-id<TAB>corpus-id<TAB>score``) at ``qrels/<split>.tsv`` or ``qrels.tsv``.
Malformed data raises `VaultError` naming the file and line, since a silently skipped line would skew scores.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mindnet.errors import VaultError

logger = logging.getLogger(__name__)

_SLUG_MAX = 60


@dataclass(frozen=True)
class BeirDocument:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """A benchmark: corpus by doc id, query texts by query id (only queries with qrels), graded qrels."""

    name: str
    corpus: dict[str, BeirDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder; queries are restricted to those that have qrels."""
    root = Path(folder)
    if not root.is_dir():
        raise VaultError("benchmark folder not found", path=str(root),
                         hint="pass a folder holding corpus.jsonl, queries.jsonl and qrels")
    corpus = _load_corpus(root / "corpus.jsonl")
    all_queries = _load_queries(root / "queries.jsonl")
    qrels_path = find_qrels(root, split)
    qrels = _load_qrels(qrels_path, all_queries, corpus)
    queries = {qid: all_queries[qid] for qid in qrels}
    logger.info("loaded %s: %d docs, %d queries (%d in queries.jsonl), %d qrels", root.name, len(corpus),
                len(queries), len(all_queries), sum(len(d) for d in qrels.values()))
    return BeirDataset(name=root.name, corpus=corpus, queries=queries, qrels=qrels)


def find_qrels(root: Path, split: str = "test") -> Path:
    """`qrels/<split>.tsv`, else `qrels.tsv`."""
    for candidate in (root / "qrels" / f"{split}.tsv", root / "qrels.tsv"):
        if candidate.is_file():
            return candidate
    raise VaultError("no qrels file", path=str(root), hint=f"add qrels/{split}.tsv or qrels.tsv with a "
                     "'query-id<TAB>corpus-id<TAB>score' header")


def _bad(path: Path, line: int, message: str, hint: str) -> VaultError:
    return VaultError(message, path=str(path), line=line, hint=hint)


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line."""
    if not path.is_file():
        raise VaultError("file not found", path=str(path),
                         hint="BEIR folders need corpus.jsonl and queries.jsonl")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _bad(path, number, f"invalid JSON ({exc.msg} at column {exc.colno})",
                           "each line must be one JSON object") from exc
            if not isinstance(value, dict):
                raise _bad(path, number, f"expected a JSON object, got {type(value).__name__}",
                           "each line must be one JSON object")
            yield number, value


def _string_field(record: dict[str, Any], key: str, path: Path, line: int, *, required: bool) -> str:
    value = record.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and key == "_id":
        return str(value)  # some exports write numeric ids
    if not isinstance(value, str) or (required and key == "_id" and not value):
        raise _bad(path, line, f"field {key!r} is {value!r}", f"give every record a non-empty string {key!r}")
    return value


def _load_corpus(path: Path) -> dict[str, BeirDocument]:
    corpus: dict[str, BeirDocument] = {}
    for line, record in _json_lines(path):
        doc_id = _string_field(record, "_id", path, line, required=True)
        if doc_id in corpus:
            raise _bad(path, line, f"duplicate document id {doc_id!r}", "document ids must be unique")
        title = _string_field(record, "title", path, line, required=False)
        text = _string_field(record, "text", path, line, required=True)
        corpus[doc_id] = BeirDocument(id=doc_id, title=title, text=text)
    return corpus


def _load_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line, record in _json_lines(path):
        query_id = _string_field(record, "_id", path, line, required=True)
        if query_id in queries:
            raise _bad(path, line, f"duplicate query id {query_id!r}", "query ids must be unique")
        queries[query_id] = _string_field(record, "text", path, line, required=True)
    return queries


def _load_qrels(path: Path, queries: dict[str, str],
                corpus: dict[str, BeirDocument]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if number == 1 and fields[:2] == ["query-id", "corpus-id"]:
                continue
            if len(fields) != 3:
                raise _bad(path, number, f"expected 3 tab-separated fields, got {len(fields)}: {line!r}",
                           "write 'query-id<TAB>corpus-id<TAB>score'")
            query_id, doc_id, score_text = fields
            try:
                score = int(score_text)
            except ValueError as exc:
                raise _bad(path, number, f"score {score_text!r} is not an integer",
                           "relevance grades are integers such as 0, 1, 2") from exc
            if query_id not in queries:
                raise _bad(path, number, f"query id {query_id!r} is not in queries.jsonl",
                           "add the query or remove its qrels")
            if doc_id not in corpus:
                raise _bad(path, number, f"document id {doc_id!r} is not in corpus.jsonl",
                           "add the document or remove its qrels")
            qrels.setdefault(query_id, {})[doc_id] = score
    return qrels


# --------------------------------------------------------------------------- corpus as a vault


def slugify(text: str) -> str:
    """ASCII file-name stem: lower case, words joined by '-', at most 60 chars; 'note' if nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:_SLUG_MAX].rstrip("-") or "note"


_NOT_IN_NAMES = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
_NAME_MAX = 120


def file_name(title: str) -> str:
    """A title as an Obsidian file name: without the characters a file name or a link cannot hold
    (`\\ / : * ? " < > | # ^ [ ]`, each run one space), without leading dots, at most 120 characters."""
    name = " ".join(_NOT_IN_NAMES.sub(" ", unicodedata.normalize("NFC", title)).split()).lstrip(".").strip()
    return name[:_NAME_MAX].rstrip() or "note"


def note_filename(doc: BeirDocument, shared: bool = False) -> str:
    """The document's title as its note's file name (a note's name is its file name, as in Obsidian), so a
    corpus reads like a vault a user keeps. `shared`: other documents have the same title; the note then goes
    into a folder of its own, `<8 hex of blake2b(id)>/`, as a vault keeps two notes of one name."""
    name = file_name(doc.title or doc.id)
    if not shared:
        return f"{name}.md"
    return f"{hashlib.blake2b(doc.id.encode('utf-8'), digest_size=4).hexdigest()}/{name}.md"


def note_filenames(docs: list[BeirDocument]) -> dict[str, str]:
    """doc id -> note file name for a corpus (titles shared by several documents get the id's hash)."""
    counts: dict[str, int] = {}
    for doc in docs:
        key = file_name(doc.title or doc.id).casefold()
        counts[key] = counts.get(key, 0) + 1
    return {doc.id: note_filename(doc, counts[file_name(doc.title or doc.id).casefold()] > 1) for doc in docs}


def render_note(doc: BeirDocument) -> str:
    """Markdown with YAML frontmatter (id, title; the id when the title is empty) and the text as body."""
    frontmatter = yaml.safe_dump({"id": doc.id, "title": doc.title or doc.id}, allow_unicode=True,
                                 sort_keys=False, width=10_000)
    return f"---\n{frontmatter}---\n\n{doc.text.strip()}\n"


def write_as_vault(dataset: BeirDataset, folder: str | Path) -> dict[str, str]:
    """Write one note per document into `folder`; returns doc id -> note path relative to `folder` (POSIX)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    owners: dict[str, str] = {}
    names = note_filenames(list(dataset.corpus.values()))
    for doc in dataset.corpus.values():
        name = names[doc.id]
        if name.casefold() in owners:  # a blake2b collision of two ids that also share a title
            raise VaultError(f"documents {owners[name.casefold()]!r} and {doc.id!r} map to the same note file",
                             path=str(root / name), hint="rename one of the document ids")
        owners[name.casefold()] = doc.id
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(render_note(doc), encoding="utf-8")
        paths[doc.id] = name
    logger.info("wrote %d notes of %s to %s", len(paths), dataset.name, root)
    return paths
