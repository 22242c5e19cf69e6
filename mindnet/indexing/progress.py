"""`ImportProgress`: where a running import stands, for the /health endpoint, the UI banner and the CLI.

Phase 1 ("notes") writes notes, chunks and edges without a model; phase 2 ("embedding") adds the dense
vectors. Texts/s is measured over phase 2's backend work so far; the ETA assumes that rate holds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ImportProgress:
    phase: str = "idle"            # idle | notes | embedding | done | failed
    notes_total: int = 0           # notes planned in the vault
    notes_written: int = 0         # changed notes written in phase 1 (of notes_to_write)
    notes_to_write: int = 0
    texts_total: int = 0           # chunks in the index
    texts_embedded: int = 0        # chunks in the index with their dense vector
    started_at: float = 0.0        # time.time() of the run's start
    embedding_started_at: float = 0.0
    embedded_this_run: int = 0
    finished_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self) -> None:
        with self._lock:
            self.phase, self.started_at, self.finished_at = "notes", time.time(), 0.0
            self.notes_written = self.notes_to_write = self.embedded_this_run = 0
            self.embedding_started_at = 0.0

    def update(self, **values: Any) -> None:
        with self._lock:
            for key, value in values.items():
                setattr(self, key, value)

    def embedded(self, n: int) -> None:
        with self._lock:
            self.texts_embedded += n
            self.embedded_this_run += n

    @property
    def texts_per_second(self) -> float | None:
        if not self.embedding_started_at or not self.embedded_this_run:
            return None
        end = self.finished_at or time.time()
        return self.embedded_this_run / max(1e-6, end - self.embedding_started_at)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            rate = self.texts_per_second
            missing = max(0, self.texts_total - self.texts_embedded)
            eta = round(missing / rate, 1) if rate and self.phase == "embedding" else None
            return {"phase": self.phase, "running": self.phase in ("notes", "embedding"),
                    "notes": self.notes_total, "notes_written": self.notes_written,
                    "notes_to_write": self.notes_to_write, "texts_total": self.texts_total,
                    "texts_embedded": self.texts_embedded, "texts_missing": missing,
                    "texts_per_s": round(rate, 2) if rate else None, "eta_seconds": eta,
                    "started_at": self.started_at or None, "finished_at": self.finished_at or None}
