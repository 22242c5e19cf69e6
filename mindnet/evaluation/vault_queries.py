"""Question sets for `mindnet eval --vault`: read a JSONL file, or build a known-item set from the vault itself.

Each line: ``{"_id": "q1", "text": "...", "gold_paths": ["folder/Note.md"]}`` (or ``"gold_ids": [...]``, note ids).
`make_queries` writes one question per `description`/`summary` frontmatter value and per alias; a note with
neither contributes its first sentence with the title's words removed (else the question would just be the
title). Gold is always the note the question came from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindnet.errors import VaultError
from mindnet.evaluation.beir import _json_lines
from mindnet.settings import TypesConfig
from mindnet.vault.links import WIKILINK, mask_code
from mindnet.vault.note import Note
from mindnet.vault.scan import scan_vault

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MARKUP = re.compile(r"^\s*(#+|[-*+]|\d+\.|>)\s*|[*_`~]|!?\[\[([^\]|]*\|)?|\]\]", re.MULTILINE)
_WORD = re.compile(r"\w+", re.UNICODE)
MIN_WORDS = 4


@dataclass
class VaultQuestion:
    id: str
    text: str
    gold_paths: list[str] = field(default_factory=list)
    gold_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"_id": self.id, "text": self.text}
        if self.gold_paths:
            out["gold_paths"] = self.gold_paths
        if self.gold_ids:
            out["gold_ids"] = self.gold_ids
        return out


def _strings(record: dict[str, Any], key: str, path: Path, line: int) -> list[str]:
    value = record.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise VaultError(f"field {key!r} is {value!r}", path=str(path), line=line,
                         hint=f"write {key!r} as a list of non-empty strings")
    return [v.strip() for v in value]


def load_questions(path: str | Path) -> list[VaultQuestion]:
    """Read a question file; a malformed line raises VaultError naming file, line and field."""
    path = Path(path)
    out: list[VaultQuestion] = []
    seen: set[str] = set()
    for line, record in _json_lines(path):
        qid = record.get("_id", f"line{line}")
        text = record.get("text")
        if not isinstance(qid, str | int) or isinstance(qid, bool) or str(qid) in seen:
            raise VaultError(f"field '_id' is {qid!r} (missing, not a string or repeated)", path=str(path),
                             line=line, hint="give every question a unique string '_id'")
        if not isinstance(text, str) or not text.strip():
            raise VaultError(f"field 'text' is {text!r}", path=str(path), line=line,
                             hint="write the question as a non-empty string 'text'")
        q = VaultQuestion(str(qid), text.strip(), _strings(record, "gold_paths", path, line),
                          _strings(record, "gold_ids", path, line))
        if not (q.gold_paths or q.gold_ids):
            raise VaultError("no gold notes", path=str(path), line=line,
                             hint="add 'gold_paths' (vault-relative paths) or 'gold_ids' (note ids)")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise VaultError("no questions in the file", path=str(path), hint="one JSON object per line")
    return out


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", _MARKUP.sub(" ", mask_code(text))).strip()


def first_sentence_without_title(note: Note) -> str | None:
    """The body's first sentence of at least MIN_WORDS words, minus the words of the note's names (its file name,
    frontmatter title and first heading)."""
    title_words = {w.casefold() for name in [note.title, *note.names] for w in _WORD.findall(name)}
    body = "\n".join(line for line in note.body.splitlines() if not line.lstrip().startswith(("#", "|", "---")))
    for sentence in _SENTENCE.split(_plain(WIKILINK.sub(lambda m: m.group(2).split("|")[-1], body))):
        kept = [w for w in sentence.split() if w.casefold().strip(".,;:!?()\"'«»„“”") not in title_words]
        if len([w for w in kept if _WORD.search(w)]) >= MIN_WORDS:
            return " ".join(kept)
    return None


def questions_for(note: Note) -> list[str]:
    """Known-item questions for one note: description/summary, aliases, else the first sentence."""
    texts = [str(note.frontmatter.get(k)).strip() for k in ("description", "summary")
             if isinstance(note.frontmatter.get(k), str) and str(note.frontmatter.get(k)).strip()]
    names = {n.casefold() for n in [note.title, *note.names]}
    texts += [a for a in note.aliases if a.strip() and a.strip().casefold() not in names]
    if not texts:
        sentence = first_sentence_without_title(note)
        texts = [sentence] if sentence else []
    return list(dict.fromkeys(texts))


def make_questions(vault: Path, types: TypesConfig) -> list[VaultQuestion]:
    notes, _ = scan_vault(vault, types)
    out: list[VaultQuestion] = []
    for note in sorted(notes, key=lambda n: n.path):
        for i, text in enumerate(questions_for(note), start=1):
            out.append(VaultQuestion(f"{note.path.removesuffix('.md')}#q{i}", text, gold_paths=[note.path]))
    if not out:
        raise VaultError("no question could be made: no note has a description, summary, alias or a sentence "
                         f"of {MIN_WORDS}+ words", path=str(vault), hint="write a questions file by hand")
    return out


def write_questions(questions: list[VaultQuestion], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(q.as_dict(), ensure_ascii=False) + "\n" for q in questions),
                    encoding="utf-8")


def gold_qrels(questions: list[VaultQuestion], path_to_id: dict[str, str], source: str
               ) -> dict[str, dict[str, int]]:
    """Question id -> {gold note id: 1}; a gold path that is not an imported note raises VaultError."""
    known_ids = set(path_to_id.values())
    qrels: dict[str, dict[str, int]] = {}
    for q in questions:
        gold: dict[str, int] = {}
        for p in q.gold_paths:
            key = p.strip("/")
            note_id = path_to_id.get(key) or path_to_id.get(key + ".md")
            if note_id is None:
                raise VaultError(f"question {q.id!r}: gold path {p!r} is not an imported note", path=source,
                                 hint="give the path relative to the vault, e.g. 'projects/mindnet.md'")
            gold[note_id] = 1
        for note_id in q.gold_ids:
            if note_id not in known_ids:
                raise VaultError(f"question {q.id!r}: gold id {note_id!r} is not an imported note", path=source,
                                 hint="use the note id (frontmatter id, else the path without .md)")
            gold[note_id] = 1
        qrels[q.id] = gold
    return qrels
