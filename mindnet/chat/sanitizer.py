"""Interview drafts: turn an LLM reply into a clean note (frontmatter + Markdown body).

LLMs wrap the note in a code block (or not), break the YAML, invent frontmatter fields
("Situation", "Gefühl"), leave the frontmatter open or repeat it. `normalize_meta_and_body`
repairs all of that and reports each repair in `NoteDraft.warnings`; it never raises on a bad reply.
This module holds the repair rules (allowed fields, values, sections, title, id); reading the reply
(code blocks, frontmatter, headings) is in `mindnet.chat.draft_parse`.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from datetime import date, datetime
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mindnet.chat.draft_parse import (
    _FENCE,
    _clean_newlines,
    _extract_note_text,
    _headings,
    _merge_leading_frontmatters,
    _parse_frontmatter,
    _shorten,
    _split_frontmatter,
)
from mindnet.chat.draft_parse import _KEY_LINE as _KEY_LINE  # re-exported: benchmarks/bench_regex.py times it
from mindnet.settings import InterviewSchema

logger = logging.getLogger(__name__)

ALWAYS_ALLOWED: tuple[str, ...] = ("type", "id", "title", "created", "tags", "aliases")
DEFAULT_TITLE = "Unbenannte Notiz"
_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_ISO_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def refuse_yaml_references(markdown: str) -> None:
    """Raise DraftError when a draft's frontmatter uses YAML anchors (&name) or aliases (*name): the import
    refuses such notes, and expanding them costs exponential time."""
    from mindnet.errors import DraftError
    warnings: list[str] = []
    fm_text, _ = _split_frontmatter(_extract_note_text(_clean_newlines(markdown), warnings), warnings)
    if not fm_text:
        return
    try:
        for token in yaml.scan(fm_text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.AliasToken | yaml.AnchorToken):
                kind = "alias" if isinstance(token, yaml.AliasToken) else "anchor"
                raise DraftError(f"the frontmatter uses a YAML {kind} ({'*' if kind == 'alias' else '&'}"
                                 f"{token.value}) on its line {token.start_mark.line + 1}; notes may not",
                                 hint="write the value out instead of referring to it")
    except yaml.YAMLError:
        return   # not YAML at all: the sanitizer reads it line by line, without references


class NoteDraft(BaseModel):
    """A note ready to save: frontmatter (YAML-safe plain values) and a Markdown body."""

    model_config = ConfigDict(extra="forbid")

    frontmatter: dict[str, Any]
    body: str
    title: str
    note_type: str
    note_id: str
    warnings: list[str] = Field(default_factory=list)

    def to_markdown(self) -> str:
        """The note file: `---` YAML `---`, a blank line, then the body."""
        meta = yaml.safe_dump(self.frontmatter, allow_unicode=True, sort_keys=False,
                              default_flow_style=False, width=4096)
        text = f"---\n{meta}---\n"
        if self.body.strip():
            text += "\n" + self.body.strip("\n") + "\n"
        return text


# --------------------------------------------------------------------------- public functions


def normalize_meta_and_body(draft: str, *, note_type: str, schema: InterviewSchema,
                            now: datetime | None = None) -> NoteDraft:
    """Parse an LLM reply into a NoteDraft that only has the frontmatter fields `schema` allows."""
    warnings: list[str] = []
    text = _extract_note_text(_clean_newlines(draft or ""), warnings)
    if not text.strip():
        warnings.append("the reply was empty; started an empty draft")
    fm_text, body = _split_frontmatter(text, warnings)
    fields: dict[str, Any] = {}
    if fm_text is not None:
        fields, leftover = _parse_frontmatter(fm_text, warnings)
        if leftover:
            body = leftover + "\n\n" + body
    body = _merge_leading_frontmatters(body, fields, warnings)
    draft_note = _assemble(fields, body, note_type=note_type, schema=schema, now=now,
                           warnings=warnings, warn_missing=True)
    for w in draft_note.warnings:
        logger.debug("draft %s: %s", draft_note.note_id, w)
    return draft_note


def empty_draft(note_type: str, schema: InterviewSchema, title: str | None = None,
                now: datetime | None = None) -> NoteDraft:
    """The schema's blank note: every required and optional field empty, every section a heading."""
    fields: dict[str, Any] = {"title": title or DEFAULT_TITLE}
    for name in [*schema.required, *schema.optional]:
        fields.setdefault(name, "")
    return _assemble(fields, "", note_type=note_type, schema=schema, now=now, warnings=[], warn_missing=False)


def slugify(text: str) -> str:
    """ASCII slug: "Größe & Maß" -> "groesse-mass"; empty when nothing ASCII is left."""
    folded = unicodedata.normalize("NFC", text).casefold()
    folded = folded.translate(str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}))
    ascii_only = unicodedata.normalize("NFKD", folded).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_only).strip("-")[:60].strip("-")


def make_note_id(title: str, created: str) -> str:
    """Deterministic id: slug of the title plus a short hash of title and creation date."""
    digest = hashlib.sha1(f"{title}|{created}".encode()).hexdigest()[:8]
    return f"{slugify(title) or 'note'}-{digest}"



# --------------------------------------------------------------------------- values


def _plain(value: Any) -> Any:
    """YAML/JSON-safe plain value: dates as ISO strings, tuples/sets as lists, keys as strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_plain(v) for v in items]
    if value is None or isinstance(value, str | int | float | bool):
        return value.strip() if isinstance(value, str) else value
    return str(value)


def _as_list(value: Any, *, split_spaces: bool) -> list[str]:
    if value is None:
        return []
    raw = value if isinstance(value, list | tuple) else [value]
    out: list[str] = []
    seen: set[str] = set()   # a list lookup per part would be quadratic in the number of tags
    for item in raw:
        if isinstance(item, dict | list):
            item = ", ".join(map(str, item.values() if isinstance(item, dict) else item))
        pattern = r"[,\s]+" if split_spaces else r","
        for part in re.split(pattern, str(item)):
            part = part.strip().lstrip("#").strip() if split_spaces else part.strip()
            if part and part not in seen:
                seen.add(part)
                out.append(part)
    return out


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def _render_value(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(f"- {_inline(v)}" for v in value)
    if isinstance(value, dict):
        return "\n".join(f"- **{k}:** {_inline(v)}" for k, v in value.items())
    return str(value).strip()


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_inline(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_inline(v) for v in value)
    return " ".join(str(value).split())




def _key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().casefold())


def _heading_key(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFC", text).casefold()))


# --------------------------------------------------------------------------- body




def _add_to_section(body: str, heading: str, content: str) -> str:
    """Append `content` to the `## heading` section, creating the section at the end when missing."""
    lines = body.split("\n")
    heads = _headings(lines)
    for n, (index, level, text) in enumerate(heads):
        if level >= 2 and _heading_key(text) == _heading_key(heading):
            end = next((i for i, lvl, _ in heads[n + 1:] if lvl <= level), len(lines))
            section = lines[index + 1:end]
            while section and not section[-1].strip():
                section.pop()
            new = [*lines[:index + 1], *section, "", *content.split("\n"), ""]
            return "\n".join(new + lines[end:]).strip("\n")
    return _append_block(body, f"## {heading}\n\n{content}" if content else f"## {heading}")


def _append_block(body: str, block: str) -> str:
    body = body.rstrip("\n")
    return f"{body}\n\n{block}" if body.strip() else block


def _separate_rules(body: str) -> str:
    """Keep `---` rules in the body as rules: a blank line before, so they never underline a heading."""
    lines = body.split("\n")
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if m:
            fence = m["fence"] if fence is None else (None if not m["info"] else fence)
        elif fence is None and line.strip() == "---" and out and out[-1].strip():
            out.append("")
        out.append(line.rstrip())
    return "\n".join(out)


def _title_from_body(body: str) -> str | None:
    lines = body.split("\n")
    for _, level, text in _headings(lines):
        if level == 1 and text.strip():
            return _shorten(text)
    for line in lines:
        cleaned = re.sub(r"^[\s#>*\-+]+|[*_`]+", "", line).strip()
        if re.search(r"[^\W_]", cleaned) and not _FENCE.match(line):
            return _shorten(cleaned)
    return None


# --------------------------------------------------------------------------- assembly


def _assemble(fields: dict[str, Any], body: str, *, note_type: str, schema: InterviewSchema,
              now: datetime | None, warnings: list[str], warn_missing: bool) -> NoteDraft:
    head, tail = ALWAYS_ALLOWED[:3], ALWAYS_ALLOWED[3:]  # type, id, title first; created, tags, aliases last
    allowed = list(dict.fromkeys([*head, *schema.required, *schema.optional, *tail]))
    canonical = {_key(a): a for a in allowed}
    meta: dict[str, Any] = {}
    invented: list[tuple[str, Any]] = []
    for raw_key, value in fields.items():
        name = canonical.get(_key(raw_key))
        if name is None:
            invented.append((raw_key, _plain(value)))
        elif name in meta:
            warnings.append(f"field '{raw_key}' repeats '{name}'; kept the first value")
        else:
            meta[name] = _plain(value)

    body = _separate_rules(body.strip("\n"))
    for raw_key, value in invented:
        heading = raw_key.strip().replace("_", " ")
        heading = heading[:1].upper() + heading[1:]
        if _is_empty(value):
            warnings.append(f"dropped the empty field '{raw_key}' (not a field of the {note_type} schema)")
            continue
        body = _add_to_section(body, heading, _render_value(value))
        warnings.append(f"moved the field '{raw_key}' into the body as '## {heading}' "
                        f"(not a field of the {note_type} schema)")

    given_type = meta.get("type")
    if given_type not in (None, "", note_type):
        warnings.append(f"type '{given_type}' replaced by '{note_type}'")
    meta["type"] = note_type

    title = meta.get("title")
    title = _shorten(str(title)) if not _is_empty(title) and not isinstance(title, list | dict) else None
    title = title or _title_from_body(body) or DEFAULT_TITLE
    meta["title"] = title

    now = now or datetime.now().astimezone()
    created = _iso_day(meta.get("created"))
    if created is None and not _is_empty(meta.get("created")):
        warnings.append(f"created '{meta['created']}' is not a date (YYYY-MM-DD); used today")
    meta["created"] = created or now.date().isoformat()

    given_id = meta.get("id")
    if isinstance(given_id, str) and _ID_OK.match(given_id):
        note_id = given_id
    else:
        if not _is_empty(given_id):
            warnings.append(f"id {given_id!r} is not a valid id; generated one from the title")
        note_id = make_note_id(title, meta["created"])
    meta["id"] = note_id

    for name, split in (("tags", True), ("aliases", False)):
        if name in meta:
            meta[name] = _as_list(meta[name], split_spaces=split)

    for name in schema.required:
        if _is_empty(meta.get(name)):
            meta[name] = ""
            if warn_missing:
                warnings.append(f"required field '{name}' is empty; fill it in before saving")

    present = {_heading_key(text) for _, _, text in _headings(body.split("\n"))}
    for section in schema.sections:
        if _heading_key(section) not in present:
            body = _append_block(body, f"## {section}")

    ordered = {k: meta[k] for k in allowed if k in meta}
    body = body.strip("\n")
    return NoteDraft(frontmatter=ordered, body=body + "\n" if body else "", title=title,
                     note_type=note_type, note_id=note_id, warnings=warnings)


def _iso_day(value: Any) -> str | None:
    if isinstance(value, datetime | date):
        return value.isoformat()[:10]
    if isinstance(value, str):
        m = _ISO_DAY.match(value.strip())
        if m:
            try:
                return date.fromisoformat(m[1]).isoformat()
            except ValueError:
                return None
    return None
