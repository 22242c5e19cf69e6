"""Question sets for `mindnet eval --vault`: read a JSONL file, or build a known-item set from the vault itself.

Each line: ``{"_id": "q1", "text": "...", "gold_paths": ["folder/Note.md"]}`` (or ``"gold_ids": [...]``, note ids).
`make_questions` writes one question per `description`/`summary` frontmatter value and per alias; a note with
neither contributes a clue: its first sentence of MIN_WORDS+ words with the note's names (file name, frontmatter
title, first heading) blanked out as ``___``. Gold is always the note the question came from.

Why a blank and not another sentence, or a spelled-out placeholder:

- The first sentence is usually the note's definition ("Ein Brot braucht Sauerteig, weil ..."), what someone who
  looks for the note remembers; a later sentence without the title often leans on it ("It also ...") and
  identifies the note less well. So the first sentence stays, with the title masked, never deleted: deleting left
  "Ein braucht Sauerteig"; masking gives the cloze "Ein ___ braucht Sauerteig, weil ...".
- ``___`` fits every language and keeps the words around it right (no article to adapt, no language to guess),
  and it adds no word to the question: the sparse tokenizer drops underscores, while "this note"/"diese Notiz"
  would match every note of a vault that is about notes ("Beim diese Notiz wird eine Notiz zerlegt").
- A name is masked as a whole phrase first (case-insensitive, between word boundaries, any punctuation between
  its words: "Kyu-Prüfung" masks "Kyu Prüfung"); then each remaining content word of a name alone, as before,
  so no title word leaks. Function words ("in", "nach", "der") and numbers of a title are not masked alone:
  they are not the title and would blank out every sentence. Adjacent blanks merge into one.

Index notes (Maps of Content, link lists, see `is_index_note`) give no question at all, and a sentence made
mostly of link titles is passed over for the next one: neither says what the note is about. `build_questions`
counts the notes that gave no question, by reason.
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
from mindnet.vault.index_notes import MARKDOWN_LINK, is_index_body
from mindnet.vault.links import REL_PREFIX, TAG, WIKILINK, mask_code
from mindnet.vault.note import Note
from mindnet.vault.scan import scan_vault

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# no sentence ends after an ordinal ("zum 3. Kyu", "am 14. März"), one letter ("z. B.", "e.g.") or an abbreviation
_NO_END = re.compile(r"(?<!\w)(?:\d{1,2}|\w|ca|bzw|usw|vgl|etc|ggf|evtl|inkl|bspw|sog|al|Nr|Dr|vs)\.$", re.IGNORECASE)
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+[.)]|>)\s*(?:\[[ xX]\]\s*)?|\[![^\]]*\][+-]?|[*_`~]", re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_WORD = re.compile(r"\w+", re.UNICODE)
_LINK_OPEN, _LINK_CLOSE = "\x01", "\x02"     # around link labels in the text, to count a sentence's link words
_LINK_LABEL = re.compile("\x01([^\x02]*)\x02")
_LINK_MARKS = re.compile("[\x01\x02]")
PLACEHOLDER = "___"
_BLANKS = re.compile(r"___(?:[\s\-–/]*___)+")
MIN_WORDS = 4
LINK_SHARE = 0.5      # more than this share of link-title words: an index note's body, a sentence passed over
SKIP_INDEX = "index notes"
SKIP_LINK_SENTENCES = "only link-title sentences"
SKIP_NO_SENTENCE = f"no sentence of {MIN_WORDS}+ words"
# a title's words masked only as part of the whole title: alone they are everyday words of every sentence
_FUNCTION_WORDS = frozenset("""
    a an and as at by for from in into is of on or the to vs with my our your this that
    am an auf aus bei das dem den der des die dies diese dieser dieses ein eine einem einen einer eines für im in
    ist kein keine keinem keinen mein meine meinem meinen mit nach oder statt über um und unter vom von vor zu zum
    zur
""".split())


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
    return re.sub(r"\s+", " ", _MARKUP.sub(" ", TAG.sub(" ", text))).strip()


def _wiki_label(match: re.Match[str]) -> str:
    """What Obsidian shows for a wikilink, between link marks; an embed shows another file, not this note's words."""
    if match.group(1):
        return " "
    target, _, alias = match.group(2).partition("|")
    rel = REL_PREFIX.match(target.strip())
    target = rel.group(2) if rel else target
    return _marked(alias or target.split("#")[0] or target.lstrip("#"))


def _markdown_label(match: re.Match[str]) -> str:
    text = match.group(0)
    return " " if text.startswith("!") else _marked(text[1:text.index("](")])


def _marked(label: str) -> str:
    return f"{_LINK_OPEN}{label.strip()}{_LINK_CLOSE}" if label.strip() else " "


def _units(body: str) -> list[str]:
    """The body's prose as text units (paragraphs and list items, so no sentence spans two), link labels marked,
    code, headings, tables, rules, tags and markup gone."""
    units: list[str] = []
    paragraph: list[str] = []
    for line in mask_code(body).splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "|", "---", "***", "___")) or _LIST_ITEM.match(line):
            units.append("\n".join(paragraph))
            paragraph = []
            if _LIST_ITEM.match(line):
                units.append(line)
            continue
        paragraph.append(line)
    units.append("\n".join(paragraph))      # lines kept apart: each quoted line's ">" is markup
    texts = (_plain(MARKDOWN_LINK.sub(_markdown_label, WIKILINK.sub(_wiki_label, u))) for u in units)
    return [t for t in texts if t]


def _sentences(text: str) -> list[str]:
    """Sentences of one unit; a period after an ordinal ("zum 3. Kyu") or an abbreviation ("z. B.") ends none."""
    out: list[str] = []
    for piece in _SENTENCE.split(text):
        if out and _NO_END.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


def _link_share(marked: str) -> tuple[int, int]:
    """(words inside link labels, all words) of a text with marked link labels."""
    linked = sum(len(_WORD.findall(m)) for m in _LINK_LABEL.findall(marked))
    return linked, len(_WORD.findall(marked))


def is_index_note(note: Note, types: TypesConfig) -> bool:
    """An index note (a Map of Content, a "Start here" page, a list of links) gives no known-item question. It is
    one when
    - it has the index type: the import made it one (frontmatter type, a #moc/#index tag or a body of link items,
      `types.index_notes`) and damps it in every search, so a question for it would measure the damping; or
    - its body is link items by the import's rule (`mindnet.vault.index_notes`), also with detection turned off
      (`min_links` links or more, and `min_link_lines` of its text lines links with few other words); or
    - more than LINK_SHARE of the words of its prose are link titles (short link lists the import rule lets by)."""
    cfg = types.index_notes
    if note.type == types.index_type() or is_index_body(note.body, min_links=cfg.min_links,
                                                        min_link_lines=cfg.min_link_lines,
                                                        max_item_words=cfg.max_item_words):
        return True
    shares = [_link_share(unit) for unit in _units(note.body)]
    linked, words = sum(s[0] for s in shares), sum(s[1] for s in shares)
    return words > 0 and linked > LINK_SHARE * words


def _name_patterns(note: Note) -> list[re.Pattern[str]]:
    """Patterns of the note's names, whole phrases first (longest first), then their content words one by one."""
    names = sorted({tuple(_WORD.findall(n)) for n in [note.title, *note.names]} - {()}, key=len, reverse=True)
    words = sorted({w for name in names for w in name
                    if w.casefold() not in _FUNCTION_WORDS and any(c.isalpha() for c in w)}, key=len, reverse=True)
    phrases = [r"\W+".join(map(re.escape, name)) for name in names]
    if words:
        phrases.append("|".join(map(re.escape, words)))
    # an inflected name ("des Brotes", "Embeddings") is still the name
    return [re.compile(rf"(?<!\w)(?:{p})(?:e?[sn]|e)?(?!\w)", re.IGNORECASE) for p in phrases]


def mask_names(sentence: str, note: Note) -> str:
    """`sentence` with the note's names blanked as PLACEHOLDER (see the module docstring)."""
    for pattern in _name_patterns(note):
        sentence = pattern.sub(PLACEHOLDER, sentence)
    return _BLANKS.sub(PLACEHOLDER, sentence)


def clue_sentence(note: Note) -> tuple[str | None, str | None]:
    """(The first sentence of MIN_WORDS+ words of its own, not mostly link titles, with the names masked; None) or
    (None, why there is none)."""
    link_sentences = False
    for unit in _units(note.body):
        for marked in _sentences(unit):
            sentence = mask_names(_LINK_MARKS.sub("", marked), note)
            if sum(w != PLACEHOLDER for w in _WORD.findall(sentence)) < MIN_WORDS:
                continue
            linked, words = _link_share(marked)
            if linked > LINK_SHARE * words:
                link_sentences = True
                continue
            return sentence, None
    return None, SKIP_LINK_SENTENCES if link_sentences else SKIP_NO_SENTENCE


def questions_for(note: Note) -> tuple[list[str], str | None]:
    """Known-item questions for one note: description/summary, aliases, else a clue sentence; with none, why."""
    texts = [str(note.frontmatter.get(k)).strip() for k in ("description", "summary")
             if isinstance(note.frontmatter.get(k), str) and str(note.frontmatter.get(k)).strip()]
    names = {n.casefold() for n in [note.title, *note.names]}
    texts += [a for a in note.aliases if a.strip() and a.strip().casefold() not in names]
    if texts:
        return list(dict.fromkeys(texts)), None
    sentence, why = clue_sentence(note)
    return ([sentence] if sentence else []), why


@dataclass
class QuestionSet:
    questions: list[VaultQuestion]
    skipped: dict[str, int] = field(default_factory=dict)     # why -> notes that gave no question


def build_questions(vault: Path, types: TypesConfig) -> QuestionSet:
    notes, _ = scan_vault(vault, types)
    out = QuestionSet([])
    for note in sorted(notes, key=lambda n: n.path):
        texts, why = ([], SKIP_INDEX) if is_index_note(note, types) else questions_for(note)
        if why:
            out.skipped[why] = out.skipped.get(why, 0) + 1
        for i, text in enumerate(texts, start=1):
            out.questions.append(VaultQuestion(f"{note.path.removesuffix('.md')}#q{i}", text,
                                               gold_paths=[note.path]))
    if not out.questions:
        skipped = ", ".join(f"{why}: {n}" for why, n in out.skipped.items())
        raise VaultError(f"no question could be made: no note has a description, summary, alias or a sentence "
                         f"of {MIN_WORDS}+ words (skipped {skipped or 'none'})", path=str(vault),
                         hint="write a questions file by hand")
    return out


def make_questions(vault: Path, types: TypesConfig) -> list[VaultQuestion]:
    return build_questions(vault, types).questions


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
