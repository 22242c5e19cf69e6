"""A note read from the vault: its identity, type, metadata and body."""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import Any

from mindnet.errors import VaultError
from mindnet.settings import TypesConfig
from mindnet.vault.budget import within_budget
from mindnet.vault.frontmatter import as_string_list, parse_yaml_lines, split_fences
from mindnet.vault.headings import first_h1, has_placeholder
from mindnet.vault.index_notes import is_index_body
from mindnet.vault.links import extract_tags
from mindnet.vault.masking import mask_code

# Stable namespace for note ids derived from paths: the same path gives the same id on every machine.
NOTE_NAMESPACE = uuid.UUID("6f1c5c3e-7a55-4c8e-9d5e-3b1e2b7d0a11")


@dataclass
class Note:
    """A note. Its name (`title`) is its file name without `.md`, as Obsidian shows it; a frontmatter `title` and
    the first level-1 heading outside code are extra names (`names`), searchable like aliases and shown beside
    the name, never instead of it."""

    note_id: str
    path: str                  # vault-relative, POSIX separators
    title: str                 # the file name without .md
    type: str
    aliases: list[str]
    tags: list[str]
    frontmatter: dict[str, Any]
    body: str
    body_line: int             # 1-based line of the body's first line in the file
    content_hash: str          # sha256 of the raw file bytes
    mtime: float = 0.0
    size: int = 0              # the file's size and mtime (ns) as seen before reading it: a later change
    mtime_ns: int = 0          # always differs from them, so an import can skip files whose stat is unchanged
    warnings: list[str] = field(default_factory=list)
    frontmatter_error: VaultError | None = None   # the frontmatter was ignored for this reason (line, fix)
    names: list[str] = field(default_factory=list)     # frontmatter title, first H1 (when they differ from title)
    warnings_at: list[tuple[int, str]] = field(default_factory=list)   # (file line, warning)

    @property
    def stem(self) -> str:
        return PurePosixPath(self.path).stem


def path_note_id(rel_path: str) -> str:
    return str(uuid.uuid5(NOTE_NAMESPACE, rel_path))


def resolve_type(frontmatter_type: Any, rel_path: str, types: TypesConfig) -> tuple[str, str | None]:
    """Frontmatter `type` > first matching path rule > default. Returns (type, warning or None)."""
    if frontmatter_type not in (None, ""):
        name = str(frontmatter_type).strip().lower()
        if name in types.types:
            return name, None
        by_alias = next((t for t, spec in types.types.items() if name in (a.lower() for a in spec.aliases)), None)
        if by_alias:
            return by_alias, None
        return types.default_type, (
            f"unknown type '{frontmatter_type}' in frontmatter; using '{types.default_type}' "
            f"(known: {', '.join(sorted(types.types))}; add it to types.yaml or fix the spelling)")
    for name, spec in types.types.items():
        if any(fnmatch(rel_path, pattern) or fnmatch(rel_path.lower(), pattern.lower()) for pattern in spec.paths):
            return name, None
    return types.default_type, None


def _looks_like_index(body: str, tags: list[str], types: TypesConfig) -> bool:
    """A note without a frontmatter type that is an index note (MOC, "Start here" page): tagged as one, or a body
    that is mostly links (`types.index_notes`). A type given in the frontmatter always wins."""
    if types.index_type() is None:
        return False
    cfg = types.index_notes
    if set(tags) & {t.lower() for t in cfg.tags}:
        return True
    return is_index_body(body, min_links=cfg.min_links, min_link_lines=cfg.min_link_lines,
                         max_item_words=cfg.max_item_words)


def _json_safe(value: Any) -> Any:
    """Frontmatter goes into JSON payloads: dates become ISO strings, everything else stays plain."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def parse_note(raw: bytes, rel_path: str, types: TypesConfig, *, mtime: float = 0.0, size: int = 0,
               mtime_ns: int = 0, body_lines: int | None = None) -> Note:
    """Parse one file's bytes. Raises VaultError (with file and line) for input that cannot become a note.
    `body_lines`: keep only the body's first lines (a note cut at its reading budget, `mindnet.vault.budget`).
    An empty file is a note without text (Obsidian creates one when a user clicks an unresolved link): links
    resolve to it, and it has no chunks."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise VaultError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", path=rel_path,
                         line=line, hint="re-save the file as UTF-8") from exc
    # NFC: an "Ü" typed in a link must match an "Ü" stored decomposed (as macOS file names are)
    text = unicodedata.normalize("NFC", text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
    rel_path = unicodedata.normalize("NFC", rel_path)
    meta, body, body_line, fm_error, left_out = _read_frontmatter(text, rel_path)
    if body_lines is not None:
        body = first_lines(body, body_lines)
    note = _note_from(_json_safe(meta), body, body_line, rel_path, types, content_hash=hashlib.sha256(raw).hexdigest(),
                      mtime=mtime, size=size, mtime_ns=mtime_ns, fm_error=fm_error)
    note.warnings_at += [(line, "frontmatter line is a template placeholder, not a value; that property was left "
                                "out and the rest kept (fix: fill in the template, or quote the value)")
                         for line in left_out]
    return note


def first_lines(body: str, lines: int) -> str:
    """The first `lines` lines of `body` (without reading past them)."""
    if lines <= 0:
        return ""
    end = -1
    for _ in range(lines):
        end = body.find("\n", end + 1)
        if end < 0:
            return body
    return body[:end]


def cut_note(note: Note, lines: int, types: TypesConfig) -> Note:
    """`note` with only its body's first `lines` lines, its title, tags and type derived from them again."""
    cut = _note_from(note.frontmatter, first_lines(note.body, lines), note.body_line, note.path, types,
                     content_hash=note.content_hash, mtime=note.mtime, size=note.size, mtime_ns=note.mtime_ns,
                     fm_error=note.frontmatter_error)
    cut.warnings_at = list(note.warnings_at)
    return cut


def _note_from(meta: dict[str, Any], body: str, body_line: int, rel_path: str, types: TypesConfig, *,
               content_hash: str, mtime: float, size: int, mtime_ns: int, fm_error: VaultError | None) -> Note:
    warnings: list[str] = []
    masked = mask_code(body, body=True)
    title = PurePosixPath(rel_path).stem
    names = _extra_names(title, meta.get("title"), first_h1(body, masked))
    note_id = str(meta["id"]).strip() if meta.get("id") not in (None, "") else path_note_id(rel_path)
    if "#" in note_id or isinstance(meta.get("id"), list | dict):
        fm_error = VaultError(f"frontmatter id {meta.get('id')!r} is not a plain name; the note was imported "
                              f"with an id made from its path", path=rel_path, line=2,
                              hint="use letters, digits, '-' or '_' (no '#': chunk ids are '<id>#cNN')")
        note_id = path_note_id(rel_path)
    note_type, warning = resolve_type(meta.get("type"), rel_path, types)
    if warning:
        warnings.append(warning)
    # tags are case-insensitive, as in Obsidian: #ML and #ml are one tag (and one filter value)
    written = [t.lstrip("#").lower() for t in as_string_list(meta.get("tags"))]
    tags = list(dict.fromkeys([t for t in written if t] + [t.lower() for t in extract_tags(body, masked=masked)]))
    if len(tags) > types.max_tags:
        # every chunk carries the note's tags: 50,000 tags in 500 chunks would be 25 million payload entries
        warnings.append(f"{len(tags)} tags; the first {types.max_tags} are kept (max_tags in types.yaml)")
        tags = tags[: types.max_tags]
    if meta.get("type") in (None, "") and _looks_like_index(body, tags, types):
        note_type = types.index_type() or note_type
    return Note(
        note_id=note_id, path=rel_path, title=title, type=note_type,
        aliases=[a for a in as_string_list(meta.get("aliases") or meta.get("alias")) if not has_placeholder(a)],
        tags=tags, frontmatter=meta, body=body, body_line=body_line, content_hash=content_hash, mtime=mtime,
        size=size, mtime_ns=mtime_ns, warnings=warnings, frontmatter_error=fm_error, names=names)


def _extra_names(name: str, title: Any, heading: str | None) -> list[str]:
    """The frontmatter title and the first H1, each once (any case) and only when written otherwise than the file
    name ("Embeddings" beside embeddings.md is kept: it is how the user writes it); a list, a mapping or a
    template placeholder is no name."""
    out: list[str] = []
    seen: set[str] = set()
    written = str(title).strip() if isinstance(title, str | int | float) and not isinstance(title, bool) else ""
    for candidate in (written, (heading or "").strip()):
        if candidate and candidate != name and not has_placeholder(candidate) and candidate.casefold() not in seen:
            seen.add(candidate.casefold())
            out.append(candidate)
    return out


def _read_frontmatter(text: str, rel_path: str
                      ) -> tuple[dict[str, Any], str, int, VaultError | None, list[int]]:
    """(frontmatter, body, body line, why the frontmatter was ignored, lines left out as template placeholders).
    Frontmatter that does not parse must not hide the note from search: the note is read without it, and the
    error becomes a warning."""
    try:
        raw, body, body_line = split_fences(text, path=rel_path)
    except VaultError as exc:   # an opening '---' that never closes may be a rule: the whole text is the body
        return {}, text, 1, _ignored(exc), []
    if raw is None:
        return {}, body, body_line, None, []
    try:
        meta, left_out = parse_yaml_lines(raw, path=rel_path)
        return meta, body, body_line, None, left_out
    except VaultError as exc:
        return {}, body, body_line, _ignored(exc), []


def _ignored(exc: VaultError) -> VaultError:
    return VaultError(f"{exc.message}; the note was imported without its frontmatter", path=exc.path,
                      line=exc.line, hint=exc.hint)


def read_regular_file(path: Path, rel: str, limit: int) -> tuple[bytes, float]:
    """The bytes and mtime of a regular file of at most `limit` bytes (`read_regular_file_stat`: and its stat)."""
    raw, info = read_regular_file_stat(path, rel, limit)
    return raw, info.st_mtime


def read_regular_file_stat(path: Path, rel: str, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes and stat of a regular file of at most `limit` bytes. Opened without blocking and checked on
    the open handle, so a FIFO or device swapped in after the scan is refused instead of hanging the read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise VaultError("not a regular file (a FIFO, socket or device); not read", path=rel,
                             hint="keep only Markdown files in the vault")
        if info.st_size > limit:
            raise VaultError(f"file is {info.st_size / 1e6:.1f} MB, over the {limit / 1e6:.1f} MB limit",
                             path=rel, hint="split the note or raise max_file_bytes in types.yaml")
        raw = handle.read(limit + 1)
    if len(raw) > limit:     # grew after the size check
        raise VaultError(f"file is over the {limit / 1e6:.1f} MB limit", path=rel,
                         hint="split the note or raise max_file_bytes in types.yaml")
    return raw, info


def read_note(root: Path, path: Path, types: TypesConfig) -> Note:
    """The note at `path`, read within the per-note budget (`types.note_budget_seconds`): a note whose reading
    runs past it is kept as far as it was read, with a warning naming the line."""
    rel = path.relative_to(root).as_posix()
    # the stat comes from the open handle before reading: a write after it changes the stat, so an import that
    # trusts an unchanged stat never keeps an older text than the file's
    raw, info = read_regular_file_stat(path, rel, types.max_file_bytes)
    note, kept = within_budget(types.note_budget_seconds, lambda lines: parse_note(
        raw, rel, types, mtime=info.st_mtime, size=info.st_size, mtime_ns=info.st_mtime_ns, body_lines=lines))
    if kept is not None:
        note.warnings.append(budget_warning("reading", types, kept, raw.count(b"\n") + 2 - note.body_line))
    return note


def budget_warning(stage: str, types: TypesConfig, kept: int, total: int) -> str:
    return (f"{stage} this note took longer than its budget of {types.note_budget_seconds:g} s "
            f"(note_budget_seconds in types.yaml): imported up to body line {kept} of {total}, the rest is not "
            f"searchable (fix: split the note)")
