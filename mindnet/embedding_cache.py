"""The embedding cache: vectors by (model key, sha256 of the text) in SQLite, so re-imports only embed text that
changed. Apart from `mindnet.backends` (which re-exports `EmbeddingCache`) because it is storage, not a backend.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mindnet.data_folder import move_aside, private_file, report_damage

log = logging.getLogger(__name__)


class EmbeddingCache:
    """Vectors by (model key, sha256 of the text) in SQLite, so re-imports only embed text that changed.

    Only a cache: a garbled file is moved aside (`embeddings.sqlite.damaged-<time>`, said in the log) and started
    afresh, a read that fails is a miss and a write the disk refuses is skipped, so a damaged or full cache costs
    embedding time, never an import."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        self.path = path
        self.problem: str | None = None    # the last thing that went wrong with the file, for `check` and /health
        self._warned = False
        if path is None:
            self._db = self._open(":memory:")
            return
        try:
            self._db = self._open(str(private_file(path)))
        except sqlite3.DatabaseError as exc:
            aside = move_aside(path)
            log.warning("%s is damaged (%s): moved aside to %s; the cache starts empty (vectors are embedded "
                        "again)", path, exc, aside.name)
            self.problem = f"{path} was damaged ({exc}); moved aside to {aside.name} and started afresh"
            report_damage(path, self.problem)
            self._db = self._open(str(private_file(path)))

    @staticmethod
    def _open(target: str) -> sqlite3.Connection:
        db = sqlite3.connect(target, check_same_thread=False, timeout=30)
        if target != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")   # no fsync per commit; a lost vector is re-embedded
        db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, digest TEXT, vec BLOB, "
                   "PRIMARY KEY (model, digest))")
        db.execute("SELECT count(*) FROM (SELECT 1 FROM vectors LIMIT 1)").fetchone()   # garbled: fails here
        return db

    def _failed(self, doing: str, exc: sqlite3.Error) -> None:
        self.problem = f"{self.path}: {doing} failed ({exc})"
        if not self._warned:          # once per process, not once per batch
            self._warned = True
            log.warning("embedding cache: %s; the import goes on without it (vectors are embedded again; fix: "
                        "free disk space, or delete the file to start the cache afresh)", self.problem)

    @staticmethod
    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, list[float]]:
        digests = list({self.digest(t) for t in texts})
        found: dict[str, list[float]] = {}
        with self._lock:
            try:
                for i in range(0, len(digests), 500):
                    part = digests[i:i + 500]
                    rows = self._db.execute(
                        f"SELECT digest, vec FROM vectors WHERE model=? AND digest IN ({','.join('?' * len(part))})",
                        [model, *part]).fetchall()
                    found.update({d: np.frombuffer(v, dtype=np.float32).tolist() for d, v in rows})
            except sqlite3.Error as exc:
                self._failed("reading", exc)
        return found

    def clear(self, model: str) -> None:
        with self._lock:
            try:
                self._db.execute("DELETE FROM vectors WHERE model=?", (model,))
                self._db.commit()
            except sqlite3.Error as exc:
                self._failed("clearing", exc)

    def put_many(self, model: str, items: dict[str, list[float]]) -> None:
        with self._lock:
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
                                     [(model, d, np.asarray(v, dtype=np.float32).tobytes()) for d, v in items.items()])
                self._db.commit()
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                self._failed("writing", exc)

    def close(self) -> None:
        with self._lock:
            self._db.close()
