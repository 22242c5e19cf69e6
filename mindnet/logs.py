"""The data flywheel: every search and every rating as one JSON line (`data/logs/*.jsonl`).

`search_history.jsonl` stores what the system showed (query, hits with score breakdowns);
`feedback.jsonl` stores how the user rated it. Both join on `query_id` (a UUID4).
Appends are safe across threads and processes: a file lock on `<file>.lock` plus one `os.write`
of the whole line on an O_APPEND descriptor, so lines never interleave or tear.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, Field, ValidationError, field_validator

from mindnet.data_folder import FILE_MODE, data_write_error, private_dir
from mindnet.errors import DataWriteError, QueryError

logger = logging.getLogger(__name__)

GENERATED_ANSWER = "generated_answer"
# why an answer was bad, as a rating may say (the UI's chips): stored id -> the words shown
FEEDBACK_REASONS = {"wrong_source": "wrong source", "missing_note": "missing note", "wrong_answer": "wrong answer"}


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_query_id() -> str:
    return str(uuid.uuid4())


def _check_uuid4(value: str) -> str:
    try:
        parsed = uuid.UUID(value)
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"{value!r} is not a UUID") from exc
    if parsed.version != 4:
        raise ValueError(f"{value!r} is not a UUID4")
    return str(parsed)


# --------------------------------------------------------------------------- JSONL file


class JsonlLog:
    """An append-only JSON-lines file, rotated at `max_bytes` into `<name>.1` ... `<name>.<keep>` (oldest last).

    A record is written whole or not at all: a write that fails (a full disk) is cut back to where it started,
    and a torn tail left by a crash is closed with a newline before the next record, so records never glue."""

    def __init__(self, path: Path, *, max_bytes: int | None = None, keep: int = 5) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
        self._lock = FileLock(str(self.path) + ".lock", mode=FILE_MODE)

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as one line (TypeError for values JSON cannot encode, DataWriteError when the
        disk refuses it: the file is then as it was)."""
        data = (json.dumps(dict(record), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            private_dir(self.path.parent)
            with self._lock:
                self._rotate_for(len(data))
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
                try:
                    start = os.fstat(fd).st_size
                    if start and os.pread(fd, 1, start - 1) != b"\n":
                        data = b"\n" + data            # a torn tail keeps a line of its own (skipped when read)
                    try:
                        written = 0
                        while written < len(data):       # a short write only on a full disk or a signal
                            written += os.write(fd, data[written:])
                    except OSError:
                        os.ftruncate(fd, start)         # no half record for the next one to glue to
                        raise
                finally:
                    os.close(fd)
        except OSError as exc:
            raise data_write_error(exc, self.path, "the record was not written") from exc

    def _rotate_for(self, size: int) -> None:
        """Under the lock: move the full file to `<name>.1` (and older ones one up) before it passes max_bytes."""
        if self.max_bytes is None:
            return
        try:
            current = self.path.stat().st_size
        except FileNotFoundError:
            return
        if current == 0 or current + size <= self.max_bytes:
            return
        self.rotated(self.keep).unlink(missing_ok=True)
        for n in range(self.keep - 1, 0, -1):
            if self.rotated(n).exists():
                os.replace(self.rotated(n), self.rotated(n + 1))
        os.replace(self.path, self.rotated(1))

    def rotated(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")

    def files(self) -> list[Path]:
        """The rotated files, oldest first, then the current one (those that exist)."""
        return [p for p in [*(self.rotated(n) for n in range(self.keep, 0, -1)), self.path] if p.exists()]

    def read(self) -> Iterator[dict[str, Any]]:
        """Every record in file order, rotated files first; corrupt lines are skipped with a warning naming
        file and line."""
        for path in self.files():
            records, _ = JsonlLog(path).read_from(0)
            yield from records

    def identity(self) -> tuple[int, int] | None:
        """(device, inode) of the current file: it changes when the file is rotated."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def read_from(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Records of the complete lines of the current file after byte `offset`, and the offset to continue
        from (a torn last line is left for later)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except FileNotFoundError:
            return [], offset
        end = chunk.rfind(b"\n") + 1  # a line still being written has no newline yet
        records: list[dict[str, Any]] = []
        for n, raw in enumerate(chunk[:end].splitlines()):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                value, problem = None, str(exc)
            else:
                problem = "" if isinstance(value, dict) else "not a JSON object"
            if problem:
                logger.warning("%s:%d: skipping corrupt log line (%s)", self.path,
                               self._line_number(offset) + n, problem)
                continue
            records.append(value)
        return records, offset + end

    def _line_number(self, offset: int) -> int:
        """1-based number of the line starting at byte `offset` (only computed for warnings)."""
        with open(self.path, "rb") as fh:
            return fh.read(offset).count(b"\n") + 1


# --------------------------------------------------------------------------- records


class SearchHit(BaseModel):
    node_id: str
    note_id: str
    title: str = ""
    score: float
    breakdown: dict[str, Any] = Field(default_factory=dict)


class SearchRecord(BaseModel):
    query_id: str = Field(default_factory=new_query_id)
    query_text: str
    timestamp: str = Field(default_factory=utc_now_iso)
    mode: str
    source: Literal["query", "chat", "mcp", "agent"]
    strategy: str | None = None
    hits: list[SearchHit] = Field(default_factory=list)

    @field_validator("query_id")
    @classmethod
    def _uuid4(cls, value: str) -> str:
        return _check_uuid4(value)


class FeedbackRecord(BaseModel):
    query_id: str
    node_id: str = Field(GENERATED_ANSWER, min_length=1)
    score: int = Field(ge=1, le=5)
    reasons: list[str] = Field(default_factory=list, description="ids of FEEDBACK_REASONS; absent in older records")
    comment: str | None = None
    timestamp: str = Field(default_factory=utc_now_iso)

    @field_validator("query_id")
    @classmethod
    def _uuid4(cls, value: str) -> str:
        return _check_uuid4(value)

    @field_validator("reasons")
    @classmethod
    def _known_reasons(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in FEEDBACK_REASONS]
        if unknown:
            raise ValueError(f"unknown reason {unknown[0]!r}; use one of {', '.join(FEEDBACK_REASONS)}")
        return list(dict.fromkeys(value))


def _query_error(err: ValidationError, prefix: str = "") -> QueryError:
    first = err.errors()[0]
    field = prefix + ".".join(str(p) for p in first["loc"])
    return QueryError(f"{first['msg']} (got {first.get('input')!r})", field=field)


# --------------------------------------------------------------------------- flywheel


class FlywheelLogs:
    """search_history.jsonl + feedback.jsonl in `log_dir`, with the checks that keep them joinable."""

    def __init__(self, log_dir: Path, *, history_max_mb: float | None = 20.0, history_keep: int = 5) -> None:
        self.log_dir = Path(log_dir)
        # ~3 KB per search: 20 MB is ~6,000 searches per file; ratings need their search, so rotated files are
        # read too (feedback is small and is never rotated)
        max_bytes = int(history_max_mb * 1024 * 1024) if history_max_mb else None
        self.search_history = JsonlLog(self.log_dir / "search_history.jsonl", max_bytes=max_bytes,
                                       keep=history_keep)
        self.feedback = JsonlLog(self.log_dir / "feedback.jsonl")
        self._known_ids: set[str] = set()
        self._known_file: tuple[int, int] | None = None     # the search_history file _known_offset is in
        self._known_offset = 0  # bytes of search_history already read into _known_ids
        self._unlogged: dict[str, str] = {}     # query_id -> why its search could not be logged

    def record_search(self, query_text: str, *, mode: str, source: Literal["query", "chat", "mcp", "agent"],
                      hits: Iterable[SearchHit | Mapping[str, Any]] = (), strategy: str | None = None,
                      query_id: str | None = None) -> str:
        """Log one search (its hits as shown) and return its query_id for later feedback. A search the disk
        refuses to log keeps its id (`unlogged` says why), so what the user asked is still answered."""
        values: dict[str, Any] = {
            "query_text": query_text, "mode": mode, "source": source, "strategy": strategy,
            "hits": [h.model_dump() if isinstance(h, SearchHit) else dict(h) for h in hits]}
        if query_id is not None:
            values["query_id"] = query_id
        try:
            record = SearchRecord.model_validate(values)
        except ValidationError as exc:
            raise _query_error(exc) from exc
        try:
            self.search_history.append(record.model_dump(mode="json"))
        except DataWriteError as exc:      # the search itself is answered; only rating it is not possible
            logger.warning("search %s not logged: %s", record.query_id, exc)
            self._unlogged[record.query_id] = str(exc)
        else:
            self._known_ids.add(record.query_id)
        return record.query_id

    def unlogged(self, query_id: str) -> str | None:
        """Why the search `query_id` could not be logged (a full disk), or None when it was."""
        return self._unlogged.get(query_id)

    def record_feedback(self, query_id: str, score: int, *, node_id: str = GENERATED_ANSWER,
                        comment: str | None = None, reasons: Iterable[str] = ()) -> FeedbackRecord:
        """Log one rating (1..5) of an answer or of one source of a logged search, with the reasons
        (FEEDBACK_REASONS ids) and comment the user gave. A later rating of the same answer or source
        replaces this one."""
        if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
            raise QueryError(f"score must be a whole number from 1 to 5, got {score!r}", field="score")
        try:
            record = FeedbackRecord(query_id=query_id, node_id=node_id, score=score, reasons=list(reasons),
                                    comment=(comment or "").strip() or None)
        except ValidationError as exc:
            raise _query_error(exc) from exc
        if record.query_id in self._unlogged:
            raise DataWriteError(f"this search could not be logged, so it cannot be rated: "
                                 f"{self._unlogged[record.query_id]}", path=str(self.search_history.path))
        if not self._is_known(record.query_id):
            raise QueryError(f"unknown query_id {query_id!r}: no search with this id in "
                             f"{self.search_history.path}; send the query_id returned by the search",
                             field="query_id")
        self.feedback.append(record.model_dump(mode="json"))
        return record

    def _is_known(self, query_id: str) -> bool:
        if query_id in self._known_ids:
            return True
        # another process may have logged it: read what was appended since the last look, or everything
        # again once the file was rotated (rare: every history_max_mb)
        current = self.search_history.identity()
        if current != self._known_file:
            self._known_file, self._known_offset = current, 0
            for path in self.search_history.files():
                if path == self.search_history.path:
                    continue
                self._known_ids.update(str(r.get("query_id")) for r in JsonlLog(path).read_from(0)[0])
        records, self._known_offset = self.search_history.read_from(self._known_offset)
        self._known_ids.update(str(r.get("query_id")) for r in records)
        return query_id in self._known_ids

    def latest_feedback(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The rating that counts per (query_id, node_id): the last one given."""
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.feedback.read():
            latest[(str(r.get("query_id")), str(r.get("node_id", GENERATED_ANSWER)))] = r
        return latest

    def feedback_report(self) -> dict[str, Any]:
        """Ratings joined with their searches.

        `answers`: all ratings of generated answers; `by_strategy`: the same per chat strategy ("none" for
        /query searches); `by_node`: ratings of single sources with their note title; `reasons`: how often each
        reason was given for an answer; `remarks`: the answer ratings with reasons or a comment, newest first.
        A later rating of the same (query_id, node_id) replaces the earlier one; ratings of unknown searches
        count as `unmatched`. Records written before reasons existed read as having none.
        """
        searches = {str(r.get("query_id")): r for r in self.search_history.read()}
        latest = self.latest_feedback()
        reasons = dict.fromkeys(FEEDBACK_REASONS, 0)
        remarks: list[dict[str, Any]] = []
        answers: list[int] = []
        by_strategy: dict[str, list[int]] = {}
        by_node: dict[str, dict[str, Any]] = {}
        unmatched = 0
        for (query_id, node_id), r in latest.items():
            search = searches.get(query_id)
            score = r.get("score")
            if search is None or not isinstance(score, int):
                unmatched += 1
                continue
            if node_id == GENERATED_ANSWER:
                answers.append(score)
                by_strategy.setdefault(search.get("strategy") or "none", []).append(score)
                given = [x for x in r.get("reasons") or [] if x in reasons]
                for x in given:
                    reasons[x] += 1
                if given or r.get("comment"):
                    remarks.append({"query_id": query_id, "query_text": search.get("query_text", ""), "score": score,
                                    "reasons": given, "comment": r.get("comment") or "",
                                    "timestamp": r.get("timestamp", "")})
                continue
            hit = next((h for h in search.get("hits") or [] if h.get("node_id") == node_id), {})
            entry = by_node.setdefault(node_id, {"note_id": hit.get("note_id"), "title": hit.get("title"),
                                                 "scores": []})
            entry["scores"].append(score)
        return {
            "feedback_count": len(latest),
            "unmatched": unmatched,
            "answers": _summary(answers),
            "by_strategy": {k: _summary(v) for k, v in sorted(by_strategy.items())},
            "by_node": {k: {"note_id": v["note_id"], "title": v["title"], **_summary(v["scores"])}
                        for k, v in sorted(by_node.items())},
            "reasons": reasons,
            "remarks": sorted(remarks, key=lambda m: str(m["timestamp"]), reverse=True),
        }


def _summary(scores: list[int]) -> dict[str, Any]:
    return {"count": len(scores), "mean_score": round(sum(scores) / len(scores), 3) if scores else None}
