"""What does not work now, for `Mindnet` (`mindnet.service`): the problems /health and the chat's welcome show
(a damaged index, damaged files moved aside, a full disk), and the points per collection.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mindnet.data_folder import damage_reports
from mindnet.errors import MindnetError
from mindnet.store.space import MB, SpaceGuard

if TYPE_CHECKING:
    import threading

    from mindnet.backends import Embedder
    from mindnet.settings import Settings
    from mindnet.store.engine import Store


class HealthMixin:
    """`problems` / `counts` of `Mindnet`."""

    if TYPE_CHECKING:     # given by `Mindnet`
        settings: Settings
        index_lock: threading.RLock
        last_counts: dict[str, int]
        _problems: dict[str, str]

        @property
        def store(self) -> Store: ...

        @property
        def embedder(self) -> Embedder: ...

        @property
        def opened(self) -> bool: ...

        @property
        def opening(self) -> bool: ...

        def _local_folder(self) -> Path | None: ...

    def problems(self) -> list[str]:
        """What does not work now, each with its fix: a damaged index, files found damaged and moved aside, a
        full disk (for /health and the chat's welcome)."""
        s = self.settings
        own = [s.cache_dir, Path(s.cache_dir).resolve().parent / "threads.sqlite", s.log_dir, s.qdrant_path]
        found = list(dict.fromkeys(self._problems.values())) + damage_reports(own)    # one line per damage
        if "embedder" in self.__dict__ and self.embedder.cache.problem and \
                self.embedder.cache.problem not in found:
            found.append(self.embedder.cache.problem)
        if self.opened:
            missing = [kind for kind in self.settings.collections if not self.store.exists(kind)]
            if 0 < len(missing) < len(self.settings.collections):     # all missing: nothing imported yet
                found.append(f"{self.store.location}: the {', '.join(missing)} collection is missing (deleted?); "
                             f"`mindnet ingest` rebuilds it from the vault and the embedding cache")
        folder = self._local_folder()
        if folder is not None and folder.is_dir():
            guard = SpaceGuard(folder, self.settings.min_free_mb)
            free = guard.free()
            if free is not None and free < guard.min_free:
                found.append(f"{folder}: the disk has {free / MB:.0f} MB free, less than the "
                             f"{self.settings.min_free_mb:g} MB imports keep free (MINDNET_MIN_FREE_MB): imports "
                             f"stop until space is freed; searches go on")
        return found

    def counts(self, *, wait: bool = True) -> dict[str, int]:
        """Points per collection (0 for a missing one). Without `wait` (/health) it never waits and never opens a
        collection that is opening, open elsewhere or found damaged: a busy index (a search or an import step
        holds it) or a warming one answers with the last counts, and a damaged collection is left out (the
        problems name it)."""
        if not wait and self.opening:       # serve opens the index in the background: do not wait for it
            return dict(self.last_counts)
        if not self.index_lock.acquire(blocking=wait):
            return dict(self.last_counts)
        try:
            store = self.store
            for kind in self.settings.collections:
                failed = f"counts {kind}"
                # opening a collection holds the interpreter lock ~0.1 s, and a damaged one fails each time
                if not wait and not store.opened(kind) and (kind in self.last_counts or failed in self._problems):
                    continue
                try:
                    self.last_counts[kind] = store.count(kind) if store.exists(kind) else 0
                    self._problems.pop(failed, None)
                except MindnetError as exc:
                    self.last_counts.pop(kind, None)
                    self._problems[failed] = str(exc)     # /health answers, and says what is wrong
                    if wait:
                        raise
        finally:
            self.index_lock.release()
        return dict(self.last_counts)
