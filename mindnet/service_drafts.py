"""Saving a chat draft as a note, for `Mindnet` (`mindnet.service`): sanitized, named, checked against the ids
already indexed, written inside the vault and imported at once, so it is searchable when the call returns.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.store.collections import point_id

if TYPE_CHECKING:
    import threading

    from mindnet.chat.drafts import SavedNote
    from mindnet.chat.sanitizer import NoteDraft
    from mindnet.indexing.pipeline import ImportReport
    from mindnet.settings import Settings
    from mindnet.store.engine import Store

DRAFT_BUDGET_S = 10.0   # seconds a server may spend reading one draft (a sane one takes milliseconds)


class DraftsMixin:
    """`save_draft` / `asave_draft` of `Mindnet`, over its settings, store and import."""

    if TYPE_CHECKING:     # given by `Mindnet`
        settings: Settings
        index_lock: threading.RLock

        @property
        def store(self) -> Store: ...

        def ingest(self) -> ImportReport: ...

        async def aingest(self) -> ImportReport: ...

    def _draft_target(self, markdown: str, note_type: str, *, new_name: bool = False
                      ) -> tuple[NoteDraft, str | None]:
        draft = self._sanitize_draft(markdown, note_type)
        folder = self._draft_folder(note_type)
        draft = self._named(draft, folder, new_name)
        self._check_id_free(draft, folder)
        return draft, folder

    def _draft_folder(self, note_type: str) -> str | None:
        spec = self.settings.types.types.get(note_type)
        return spec.folder if spec else None

    def _named(self, draft: NoteDraft, folder: str | None, new_name: bool) -> NoteDraft:
        """With `new_name`, the draft under the first free "Title (n)"."""
        if not new_name:
            return draft
        from mindnet.chat.drafts import renamed
        return renamed(draft, vault_root=self.settings.vault_root, folder=folder)

    def _sanitize_draft(self, markdown: str, note_type: str) -> NoteDraft:
        """The draft as a clean note; refuses unknown types, empty text and YAML anchors/aliases."""
        from mindnet.chat.sanitizer import normalize_meta_and_body, refuse_yaml_references
        from mindnet.errors import DraftError
        schemas = self.settings.decision_engine.schemas
        if note_type not in schemas:
            raise DraftError(f"note type {note_type!r} has no interview schema",
                             path=self.settings.decision_path.name, hint=f"use one of {', '.join(schemas)}")
        if not markdown.strip():
            raise DraftError("the draft is empty", hint="write the note's text before saving it")
        size, limit = len(markdown.encode("utf-8", "surrogatepass")), self.settings.types.max_file_bytes
        if size > limit:   # checked before reading it: the note would be too large to import anyway
            raise DraftError(f"the draft is {size} bytes, over the import's limit of {limit}",
                             hint="shorten the note (or raise max_file_bytes in types.yaml)")
        refuse_yaml_references(markdown)
        return normalize_meta_and_body(markdown, note_type=note_type, schema=schemas[note_type])

    def _check_id_free(self, draft: NoteDraft, folder: str | None) -> None:
        """A draft must not take the id of another note: the import would keep only one of the two."""
        from mindnet.chat.drafts import draft_filename
        from mindnet.errors import DraftConflictError
        with self.index_lock:
            if not self.store.exists("notes"):
                return
            owners = self.store.retrieve("notes", [point_id(draft.note_id)], payload=["path"])
        own_path = "/".join(p for p in (folder, draft_filename(draft.title, fallback=draft.note_id)) if p)
        if owners and owners[0].payload.get("path") != own_path:
            raise DraftConflictError(f"the id {draft.note_id!r} is already used by {owners[0].payload.get('path')}",
                             hint="remove the 'id:' line (a fresh id is made) or choose another id")

    def _import_saved(self, draft: NoteDraft, saved: SavedNote, report: ImportReport) -> dict:
        """The saved note must be in the index; a draft the import skipped is reported, not hidden."""
        from mindnet.errors import DraftError
        root = Path(self.settings.vault_root).resolve()
        rel = saved.path.relative_to(root).as_posix()
        problem = next((i for i in report.skipped if i.path == rel), None)
        if problem is not None:
            raise DraftError(f"saved, but the import skipped it: {problem.message}", path=rel,
                             hint="fix the note in the vault; it is imported on the next run")
        return self._draft_saved(draft, saved, report)

    def _draft_saved(self, draft: NoteDraft, saved: SavedNote, report: ImportReport) -> dict:
        root = Path(self.settings.vault_root).resolve()
        backup = saved.backup.relative_to(root).as_posix() if saved.backup else None
        return {"path": saved.path.relative_to(root).as_posix(), "note_id": draft.note_id, "title": draft.title,
                "version": saved.version, "backup": backup, "warnings": list(draft.warnings),
                "import": report.as_dict()}

    def save_draft(self, markdown: str, note_type: str, *, overwrite: bool = False, replaces: str | None = None,
                   merge: bool = False) -> dict:
        """Sanitize an interview draft, save it inside the vault and import it at once so it is searchable; raises
        DraftError when it cannot be saved. An existing note is replaced only with `overwrite` and `replaces`, its
        version as the user saw it (`DraftConflictError.conflict["version"]`); the replaced text is kept as a
        backup (`backup` in the result). With `merge` and `replaces` the note stays whole and the draft's body is
        appended below it (also with a backup)."""
        from mindnet.chat.drafts import save_draft
        draft, folder = self._draft_target(markdown, note_type)
        saved = save_draft(draft, vault_root=self.settings.vault_root, folder=folder, overwrite=overwrite,
                           replaces=replaces, max_bytes=self.settings.types.max_file_bytes, merge=merge)
        return self._import_saved(draft, saved, self.ingest())

    async def asave_draft(self, markdown: str, note_type: str, *, overwrite: bool = False,
                          new_name: bool = False, replaces: str | None = None, merge: bool = False) -> dict:
        """`save_draft` for a server: all of its work in threads, so the event loop keeps answering, and the
        sanitizing within DRAFT_BUDGET_S (past it, nothing is saved); `new_name` saves under the first free
        "Title (n)" instead."""
        from mindnet.chat.drafts import save_draft
        from mindnet.errors import DraftError
        try:
            draft = await asyncio.wait_for(asyncio.to_thread(self._sanitize_draft, markdown, note_type),
                                           DRAFT_BUDGET_S)
        except TimeoutError as exc:
            raise DraftError(f"reading the draft took over {DRAFT_BUDGET_S:.0f} s; it was not saved",
                             hint="shorten the draft or simplify its frontmatter") from exc
        folder = self._draft_folder(note_type)
        draft = await asyncio.to_thread(self._named, draft, folder, new_name)
        await asyncio.to_thread(self._check_id_free, draft, folder)
        saved = await asyncio.to_thread(save_draft, draft, vault_root=self.settings.vault_root, folder=folder,
                                        overwrite=overwrite, replaces=replaces, merge=merge,
                                        max_bytes=self.settings.types.max_file_bytes)
        return self._import_saved(draft, saved, await self.aingest())
