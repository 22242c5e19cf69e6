"""Writing accepted link suggestions into an existing note: the one explicit write of Save & Analyze.

The edges go into ONE `> [!edge]` callout block appended at the end of the note (one line per kind), which the
import reads as typed edges. The caller shows the diff first; the write (`mindnet.safe_write.replace`) compares the
note with the version the plan was made from and swaps the new text in atomically under the vault's write lock,
refusing when the file changed since it was read (an editor's save in between is never overwritten), and keeps the
replaced text as a backup under `<vault>/.mindnet/backups/` (a hidden folder the import skips).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mindnet import safe_write
from mindnet.analysis.models import LinkSuggestion
from mindnet.errors import VaultError

BACKUP_DIR = safe_write.BACKUP_DIR


def edge_block(links: Sequence[LinkSuggestion]) -> str:
    """`> [!edge] kind: [[A]] [[B]]` for the first kind, `> kind: [[C]]` for each further one."""
    return callout_block([(link.relation.kind, link.link_text) for link in links])


def callout_block(links: Sequence[tuple[str, str]]) -> str:
    """The `> [!edge]` block for (kind, link text) pairs, one line per kind in the order first given."""
    kinds: dict[str, list[str]] = {}
    for kind, text in links:
        targets = kinds.setdefault(kind, [])
        if text not in targets:
            targets.append(text)
    lines = []
    for i, (kind, targets) in enumerate(kinds.items()):
        lead = "> [!edge] " if i == 0 else "> "
        lines.append(f"{lead}{kind}: " + " ".join(f"[[{t}]]" for t in targets))
    return "\n".join(lines)


@dataclass(frozen=True)
class EdgePlan:
    """What --apply would write: the note's current and new text, the diff between them, and the version
    (`safe_write.version_of`) of the file the plan was made from."""

    path: Path
    rel_path: str
    old: str
    new: str
    version: str

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.old.splitlines(keepends=True), self.new.splitlines(keepends=True),
                                            fromfile=f"a/{self.rel_path}", tofile=f"b/{self.rel_path}"))


def plan_edges(vault_root: Path, rel_path: str, links: Sequence[LinkSuggestion]) -> EdgePlan:
    if not links:
        raise VaultError("no edges to write", path=rel_path, hint="pick at least one suggestion")
    return append_plan(vault_root, rel_path, edge_block(links))


def append_plan(vault_root: Path, rel_path: str, block: str) -> EdgePlan:
    """The note with `block` appended after one blank line, in the file's own line endings."""
    path = Path(vault_root) / rel_path
    try:
        data = path.read_bytes()
        old = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VaultError(f"cannot read the note: {exc}", path=rel_path) from exc
    nl = "\r\n" if "\r\n" in old else "\n"     # keep the file's own line endings
    block = block.replace("\r\n", "\n").replace("\n", nl)
    new = old.rstrip("\r\n") + nl + nl + block + nl
    return EdgePlan(path=path, rel_path=rel_path, old=old, new=new, version=safe_write.version_of(data))


def write_plan(plan: EdgePlan, vault_root: Path, *, hint: str | None = None) -> Path:
    """Replace the note with the planned text if it is still the text the plan was made from; returns the backup
    of the replaced text. Raises NoteChangedError (it changed since: nothing written) or VaultWriteError."""
    return safe_write.replace(plan.path, plan.new.encode("utf-8"), expected=plan.version, root=Path(vault_root),
                              hint=hint or "run `mindnet suggest` again: the suggestions and the diff were made "
                                           "from the older text")


def undo_plan(plan: EdgePlan, backup: Path, vault_root: Path) -> Path:
    """Put the text `write_plan` kept in `backup` back into the note, only while the note is still exactly what the
    plan wrote; returns the backup of the undone text. Raises NoteChangedError (the note changed since: nothing
    written), VaultError (the backup is unreadable) or VaultWriteError."""
    try:
        old = Path(backup).read_bytes()
    except OSError as exc:
        raise VaultError(f"cannot read the backup {safe_write.shown_path(Path(vault_root), Path(backup))}: "
                         f"{exc.strerror or exc}", path=plan.rel_path) from exc
    return safe_write.replace(plan.path, old, expected=safe_write.version_of(plan.new.encode("utf-8")),
                              root=Path(vault_root),
                              hint="the note was edited after the edges were added; undo by hand from the backup")


def select_links(links: Sequence[LinkSuggestion], picks: str | None, min_confidence: float = 0.0
                 ) -> list[LinkSuggestion]:
    """The suggestions to write: `picks` ("1,3", 1-based as listed) or all, at `min_confidence` or above."""
    chosen = list(links)
    if picks:
        try:
            numbers = [int(p) for p in picks.replace(" ", "").split(",") if p]
        except ValueError as exc:
            raise VaultError(f"--pick {picks!r} is not a list of numbers", hint="write e.g. --pick 1,3") from exc
        bad = [n for n in numbers if not 1 <= n <= len(links)]
        if bad:
            raise VaultError(f"--pick {bad} out of range; the list has {len(links)} suggestions",
                             hint=f"use numbers from 1 to {len(links)}")
        chosen = [links[n - 1] for n in dict.fromkeys(numbers)]
    return [s for s in chosen if s.confidence >= min_confidence]


def insert_link(text: str, link: LinkSuggestion, *, at: str = "mention") -> str:
    """The draft with one suggestion taken: `at="mention"` turns its first mention into a wikilink (keeping the
    words as written), `at="end"` appends its `> [!edge] KIND: [[X]]` line (to a callout block already ending the
    text, if there is one). Only the draft's text changes; nothing is written."""
    if at == "mention":
        if not link.mentions:
            raise ValueError(f"'{link.title}' is not named in the text; insert it at the end instead")
        span = link.mentions[0]
        if text[span.start:span.end] != span.surface:
            raise ValueError("the text changed since the suggestion was made; analyse it again")
        shown = span.surface
        wiki = f"[[{link.link_text}]]" if shown == link.link_text else f"[[{link.link_text}|{shown}]]"
        return text[:span.start] + wiki + text[span.end:]
    if at != "end":
        raise ValueError(f"at={at!r}: use 'mention' or 'end'")
    body = text.rstrip("\n")
    last = body.rsplit("\n", 1)[-1]
    line = link.callout if link.callout else f"> [!edge] {link.relation.kind}: [[{link.link_text}]]"
    if last.lstrip().startswith(">") and "[!edge]" in body[body.rfind("\n\n") + 1:]:
        return body + "\n" + line + "\n"       # joins the callout block that already ends the draft
    return body + "\n\n" + line + "\n"
