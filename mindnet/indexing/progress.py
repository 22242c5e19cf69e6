"""`ImportProgress`: where the imports stand, for the /health endpoint, the UI banner and the CLI.

Phase 1 ("notes") writes notes, chunks and edges without a model; phase 2 ("embedding") adds the dense
vectors. A server runs them side by side (a saved note goes through phase 1 while the embedding goes on), so
each phase has its own flag; `phase` names the one that matters most to a reader. Texts/s is measured over the
current embedding run and the runs that follow it without a pause (a server's vector worker embeds what phase 1
wrote in one run after another); the ETA assumes that rate holds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

# a run of phase 2 that begins within this many seconds of the last one's end continues its rate: a server embeds
# what phase 1 wrote run after run, and a new run whose first texts are still at the backend has counted none
RATE_CONTINUES_S = 30.0


@dataclass
class ImportProgress:
    writing: bool = False          # phase 1 running
    embedding: bool = False        # phase 2 running
    failed: bool = False           # the last phase 1 raised
    ran: bool = False              # any phase ran in this process
    notes_total: int = 0           # notes planned in the vault
    notes_written: int = 0         # changed notes written in phase 1 (of notes_to_write)
    notes_to_write: int = 0
    texts_total: int = 0           # chunks in the index
    texts_embedded: int = 0        # chunks in the index with their dense vector
    started_at: float = 0.0        # time.time() when the last phase 1 started
    embedding_started_at: float = 0.0
    embedded_this_run: int = 0     # texts embedded since embedding_started_at (over runs that continue)
    embedding_ended_at: float = 0.0
    finished_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self) -> None:
        """Phase 1 begins."""
        with self._lock:
            self.writing, self.failed, self.ran = True, False, True
            self.started_at, self.finished_at = time.time(), 0.0
            self.notes_written = self.notes_to_write = 0

    def end_notes(self, *, failed: bool = False) -> None:
        with self._lock:
            self.writing, self.failed = False, failed
            if not self.embedding:
                self.finished_at = time.time()

    def begin_embedding(self, total: int, embedded: int) -> None:
        with self._lock:
            self.embedding, self.ran = True, True
            self.texts_total, self.texts_embedded = total, embedded
            now, self.finished_at = time.time(), 0.0
            if not (self.embedded_this_run and now - self.embedding_ended_at <= RATE_CONTINUES_S):
                self.embedding_started_at, self.embedded_this_run = now, 0

    def end_embedding(self) -> None:
        with self._lock:
            self.embedding = False
            self.embedding_ended_at = time.time()
            if not self.writing:
                self.finished_at = time.time()

    def update(self, **values: Any) -> None:
        with self._lock:
            for key, value in values.items():
                setattr(self, key, value)

    def queued(self, n: int) -> None:
        """Phase 1 wrote `n` chunks without a vector (the embedding beside it, or the next phase 2, embeds
        them)."""
        with self._lock:
            self.texts_total += n

    def embedded(self, n: int) -> None:
        with self._lock:
            self.texts_embedded += n
            self.embedded_this_run += n

    @property
    def phase(self) -> str:
        if self.writing:
            return "notes"
        if self.embedding:
            return "embedding"
        if self.failed:
            return "failed"
        return "done" if self.ran else "idle"

    @property
    def texts_per_second(self) -> float | None:
        if not self.embedding_started_at or not self.embedded_this_run:
            return None
        end = time.time() if self.embedding else (self.finished_at or time.time())
        return self.embedded_this_run / max(1e-6, end - self.embedding_started_at)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            rate = self.texts_per_second
            missing = max(0, self.texts_total - self.texts_embedded)
            eta = round(missing / rate, 1) if rate and self.embedding else None
            return {"phase": self.phase, "running": self.writing or self.embedding,
                    "notes": self.notes_total, "notes_written": self.notes_written,
                    "notes_to_write": self.notes_to_write, "texts_total": self.texts_total,
                    "texts_embedded": self.texts_embedded, "texts_missing": missing,
                    "texts_per_s": round(rate, 2) if rate else None, "eta_seconds": eta,
                    "started_at": self.started_at or None, "finished_at": self.finished_at or None}
