"""Which note a link names, by Obsidian's rules, and which chunk its `#anchor` names.

    written as                  resolved (first that matches)                                      rule
    folder/Note, ./Note,        1. relative to the linking note's folder, 2. from the vault root   path
    ../x/Note (.md optional)       (`./`, `../`: relative only; `/x`: the root only), 3. a file whose
                                   path ends with it (`[[b/Note]]` -> `a/b/Note.md`)
    Note (.md optional)         a file named so, any case (Unicode NFC); of several, the one in     name
                                the linking note's folder, else the one nearest the vault root,
                                then the first by path (the import report lists such names)
    [[#Heading]], [](#x)        this note                                                          self
    -- where Obsidian stops (it would leave these unresolved), mindnet goes on: --
    my-id                       a frontmatter `id`                                                  id
    AI                          a frontmatter alias (the explanation says "through the alias 'AI'") alias
    Entscheidung: X             a frontmatter title or first heading                                title

An unresolved link is counted by its normalised target (case, `.md`, surrounding spaces; a relative path
from the vault root), so `[[X]]`, `[[x]]` and `[[X.md]]` are one missing note, which heals when it appears.
A path that leaves the vault (`../../..`) is never followed.

`mapping` holds every lookup key with what it gives, and `Resolution.lookups` the keys one link consulted: an
incremental import derives again the edges of the notes whose keys now give something else.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mindnet.vault.anchors import anchor_keys, note_anchors
from mindnet.vault.masking import mask_code

if TYPE_CHECKING:
    from llama_index.core.schema import TextNode

RULES = ("path", "name", "self", "id", "alias", "title")   # how a link resolved ("unresolved", "outside": not)
_Candidate = tuple[int, str, str, str]       # (depth, path key, folder key, note id)


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().casefold()


def path_key(path: str) -> str:
    """A vault path as a lookup key: NFC, any case, without `.md`."""
    key = fold(path)
    return key[:-3] if key.endswith(".md") else key


def normalize_path(path: str) -> str | None:
    """`a/./b/../c` -> `a/c`; None when it climbs above the vault root. Linear in the path's length."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


@dataclass(frozen=True)
class Resolution:
    note_id: str | None
    rule: str                 # one of RULES, "unresolved" or "outside"
    target: str               # the normalised target (an unresolved link's target id)
    candidates: int = 1       # notes the rule could have picked (more than one: an ambiguous name)
    lookups: tuple[str, ...] = ()
    problem: str | None = None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LinkResolver:
    """Resolves link text to a note id by Obsidian's rules (path, file name), then by id, alias or title (see
    the module docstring). Reads notes, index state entries and catalog records alike: `note_id`, `path`,
    `aliases`, and `names` (frontmatter title, first heading) and `anchors` (anchor key -> chunk number) where
    they have them; `anchors` given here (note id -> ...) win."""

    def __init__(self, notes: Iterable[Any], anchors: dict[str, dict[str, int]] | None = None) -> None:
        self._paths: dict[str, str] = {}
        self._names: dict[str, list[_Candidate]] = {}
        self._ids: dict[str, str] = {}
        self._aliases: dict[str, list[_Candidate]] = {}
        self._titles: dict[str, list[_Candidate]] = {}
        self._anchors: dict[str, dict[str, int]] = {}
        self._mapping: dict[str, Any] | None = None
        for note in sorted(notes, key=lambda n: n.path):
            key = path_key(note.path)
            cand: _Candidate = (key.count("/"), key, _folder(key), note.note_id)
            self._paths.setdefault(key, note.note_id)
            self._names.setdefault(key.rsplit("/", 1)[-1], []).append(cand)
            self._ids.setdefault(fold(note.note_id), note.note_id)
            for alias in getattr(note, "aliases", None) or []:
                if fold(alias):
                    self._aliases.setdefault(fold(alias), []).append(cand)
            for name in getattr(note, "names", None) or []:
                if fold(name):
                    self._titles.setdefault(fold(name), []).append(cand)
            held = (anchors or {}).get(note.note_id)
            if held is None:
                held = getattr(note, "anchors", None)
            if held:
                self._anchors[note.note_id] = held

    # ------------------------------------------------------------------ resolving

    def resolve(self, text: str, source: str = "") -> str | None:
        """The note id a link to `text` from the note at path `source` resolves to, or None."""
        return self.resolve_link(text, source).note_id

    def resolve_link(self, text: str, source: str = "", source_id: str | None = None) -> Resolution:
        written = unicodedata.normalize("NFC", text).strip()
        if not written:
            if source_id is None:
                return Resolution(None, "unresolved", "")
            return Resolution(source_id, "self", path_key(source))
        key = written.casefold()
        key = key[:-3] if key.endswith(".md") else key
        folder = _folder(path_key(source)) if source else ""
        lookups: list[str] = []
        if "/" in key:
            found = self._by_path(key, folder, lookups)
            if isinstance(found, Resolution):
                return found
            target = found
        else:
            lookups.append(f"n:{key}")
            cands = self._names.get(key)
            if cands:
                return Resolution(_pick(cands, folder), "name", key, len(cands), tuple(lookups))
            target = key
        for prefix, table, rule in (("i:", None, "id"), ("a:", self._aliases, "alias"), ("t:", self._titles, "title")):
            lookups.append(f"{prefix}{key}")
            if table is None:
                if key in self._ids:
                    return Resolution(self._ids[key], rule, key, 1, tuple(lookups))
            elif key in table:
                cands = table[key]
                return Resolution(_pick(cands, folder), rule, key, len(cands), tuple(lookups))
        return Resolution(None, "unresolved", target, 0, tuple(lookups))

    def _by_path(self, key: str, folder: str, lookups: list[str]) -> Resolution | str:
        """A resolution by a written path, or (not found) the target an unresolved link counts as."""
        rooted = key.startswith("/")
        relative_only = key.startswith(("./", "../")) or key in (".", "..")
        tries: list[str] = []
        relative = None if rooted else normalize_path(f"{folder}/{key}" if folder else key)
        if relative is not None:
            tries.append(relative)
        absolute = normalize_path(key) if not relative_only else None
        if absolute is not None and absolute not in tries:
            tries.append(absolute)
        for path in tries:
            lookups.append(f"p:{path}")
            if path in self._paths:
                return Resolution(self._paths[path], "path", path, 1, tuple(lookups))
        if not tries:
            return Resolution(None, "outside", key, 0, tuple(lookups),
                              problem=f"link '{_short(key)}' points outside the vault; not followed (fix: link a "
                                      f"note inside the vault)")
        if not relative_only and not rooted and absolute:
            name = absolute.rsplit("/", 1)[-1]
            lookups.append(f"n:{name}")
            cands = [c for c in self._names.get(name, []) if c[1].endswith("/" + absolute)]
            if cands:
                return Resolution(_pick(cands, folder), "path", absolute, len(cands), tuple(lookups))
        return relative if relative_only and relative is not None else (absolute or tries[0])

    def resolve_anchor(self, note_id: str, anchor: str) -> tuple[int | None, list[str], str | None]:
        """(the chunk number of `anchor` in the note or None, the keys looked up, why it did not resolve)."""
        keys, problem = anchor_keys(anchor)
        lookups = [f"#{note_id}#{k}" for k in keys]
        held = self._anchors.get(note_id, {})
        for k in keys:
            if k in held:
                return held[k], lookups, None
        kind = "block" if anchor.startswith("^") else "heading"
        return None, lookups, problem or f"no {kind} '#{_short(anchor, 60)}' in the linked note"

    # ------------------------------------------------------------------ what the lookups give

    @property
    def mapping(self) -> dict[str, Any]:
        """Every lookup key -> what it gives (a note id, the candidates of a name, an anchor's chunk number)."""
        if self._mapping is None:
            out: dict[str, Any] = {f"p:{k}": v for k, v in self._paths.items()}
            out.update({f"i:{k}": v for k, v in self._ids.items()})
            for prefix, table in (("n:", self._names), ("a:", self._aliases), ("t:", self._titles)):
                out.update({f"{prefix}{k}": tuple((c[1], c[3]) for c in v) for k, v in table.items()})
            for note_id, held in self._anchors.items():
                out.update({f"#{note_id}#{k}": v for k, v in held.items()})
            self._mapping = out
        return self._mapping

    def ambiguous_names(self) -> dict[str, int]:
        """File names that several notes share, with how many."""
        return {k: len(v) for k, v in self._names.items() if len(v) > 1}


def _pick(cands: list[_Candidate], folder: str) -> str:
    """Of several notes: the one in the linking note's folder, else the one nearest the vault root, then the
    first by path."""
    if len(cands) == 1:
        return cands[0][3]
    here = [c for c in cands if c[2] == folder]
    return min(here or cands)[3]


def anchor_chunks(note: Any, nodes: list[TextNode]) -> dict[str, int]:
    """Anchor key -> the number (1-based) of the chunk holding that heading or block, the first of each key."""
    if not nodes or ("#" not in note.body and "^" not in note.body):
        return {}
    starts = [int(n.metadata.get("line", note.body_line)) - note.body_line for n in nodes]
    out: dict[str, int] = {}
    for anchor in note_anchors(note.body, mask_code(note.body, body=True)):
        if anchor.key not in out:
            out[anchor.key] = max(1, bisect.bisect_right(starts, anchor.line))
    return out
