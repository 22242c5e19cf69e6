"""The data flywheel: JSONL logs, search/feedback records and the feedback report."""

from __future__ import annotations

import json
import logging
import multiprocessing
import threading
import uuid
from pathlib import Path

import pytest

from mindnet.errors import QueryError
from mindnet.logs import FeedbackRecord, FlywheelLogs, JsonlLog, SearchHit, SearchRecord

HIT = {"node_id": "n1", "note_id": "qdrant", "title": "Qdrant", "score": 0.8, "breakdown": {"semantic": 0.7}}


# --------------------------------------------------------------------------- JsonlLog


def test_append_then_read(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "a.jsonl")
    log.append({"a": 1})
    log.append({"b": "ü"})
    assert list(log.read()) == [{"a": 1}, {"b": "ü"}]


def test_append_creates_parent_folders(tmp_path: Path) -> None:
    JsonlLog(tmp_path / "x" / "y" / "a.jsonl").append({"a": 1})
    assert (tmp_path / "x" / "y" / "a.jsonl").read_text(encoding="utf-8") == '{"a":1}\n'


def test_one_record_is_one_line(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "a.jsonl")
    log.append({"text": "zwei\nZeilen"})
    assert log.path.read_text(encoding="utf-8").count("\n") == 1


def test_read_missing_file_is_empty(tmp_path: Path) -> None:
    assert list(JsonlLog(tmp_path / "none.jsonl").read()) == []


def test_unencodable_record_raises(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        JsonlLog(tmp_path / "a.jsonl").append({"x": object()})


@pytest.mark.parametrize("bad", ['{"broken": ', "[1, 2]", "not json", '"string"'])
def test_corrupt_lines_are_skipped(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(f'{{"a": 1}}\n{bad}\n\n{{"b": 2}}\n', encoding="utf-8")
    assert list(JsonlLog(path).read()) == [{"a": 1}, {"b": 2}]


def test_corrupt_line_is_logged_with_file_and_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{oops\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="mindnet.logs"):
        list(JsonlLog(path).read())
    assert f"{path}:2: skipping corrupt log line" in caplog.text


def test_unfinished_last_line_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"b": 2', encoding="utf-8")
    assert list(JsonlLog(path).read()) == [{"a": 1}]


def test_read_from_continues_at_offset(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "a.jsonl")
    log.append({"a": 1})
    _, offset = log.read_from(0)
    log.append({"b": 2})
    assert log.read_from(offset) == ([{"b": 2}], log.path.stat().st_size)


def _append_many(path: str, worker: int, count: int) -> None:
    log = JsonlLog(Path(path))
    for i in range(count):
        log.append({"worker": worker, "i": i, "pad": "x" * 2000})


def test_concurrent_processes_never_tear_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 200)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    pairs = sorted((r["worker"], r["i"]) for r in map(json.loads, lines))
    assert ([p.exitcode for p in procs], pairs) == ([0] * 4, [(w, i) for w in range(4) for i in range(200)])


def test_concurrent_threads_never_tear_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    threads = [threading.Thread(target=_append_many, args=(str(path), w, 100)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["worker"], r["i"]) for r in records) == [(w, i) for w in range(8) for i in range(100)]


# --------------------------------------------------------------------------- records


def test_search_record_defaults() -> None:
    record = SearchRecord(query_text="q", mode="hybrid", source="query")
    defaults = (uuid.UUID(record.query_id).version, record.timestamp.endswith("+00:00"), record.hits)
    assert defaults == (4, True, [])


@pytest.mark.parametrize("query_id", ["abc", str(uuid.uuid1()), ""])
def test_search_record_needs_a_uuid4(query_id: str) -> None:
    with pytest.raises(ValueError, match="UUID"):
        SearchRecord(query_id=query_id, query_text="q", mode="hybrid", source="query")


@pytest.mark.parametrize("score", [0, 6, -1])
def test_feedback_record_score_range(score: int) -> None:
    with pytest.raises(ValueError):
        FeedbackRecord(query_id=str(uuid.uuid4()), score=score)


def test_feedback_record_defaults_to_the_answer() -> None:
    assert FeedbackRecord(query_id=str(uuid.uuid4()), score=3).node_id == "generated_answer"


# --------------------------------------------------------------------------- FlywheelLogs


@pytest.fixture
def logs(tmp_path: Path) -> FlywheelLogs:
    return FlywheelLogs(tmp_path / "logs")


def test_record_search_writes_the_snapshot(logs: FlywheelLogs) -> None:
    qid = logs.record_search("Was ist Qdrant?", mode="hybrid", source="chat", strategy="FACT", hits=[HIT])
    (row,) = logs.search_history.read()
    assert ({k: row[k] for k in ("query_id", "query_text", "mode", "source", "strategy", "hits")} ==
            {"query_id": qid, "query_text": "Was ist Qdrant?", "mode": "hybrid", "source": "chat",
             "strategy": "FACT", "hits": [HIT]})


def test_record_search_accepts_hit_models(logs: FlywheelLogs) -> None:
    logs.record_search("q", mode="semantic", source="query", hits=[SearchHit(**HIT)])
    assert next(logs.search_history.read())["hits"] == [HIT]


def test_record_search_keeps_a_given_query_id(logs: FlywheelLogs) -> None:
    qid = str(uuid.uuid4())
    assert logs.record_search("q", mode="hybrid", source="query", query_id=qid) == qid


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"source": "api"}, "source"),
    ({"query_id": "nope"}, "query_id"),
    ({"hits": [{"node_id": "n"}]}, "hits.0.note_id"),
])
def test_record_search_rejects_bad_values(logs: FlywheelLogs, kwargs: dict, field: str) -> None:
    args = {"mode": "hybrid", "source": "query", **kwargs}
    with pytest.raises(QueryError) as err:
        logs.record_search("q", **args)
    assert err.value.field == field


def test_record_feedback_writes_a_line(logs: FlywheelLogs) -> None:
    qid = logs.record_search("q", mode="hybrid", source="query")
    logs.record_feedback(qid, 4, node_id="n1", comment="  gut  ")
    (row,) = logs.feedback.read()
    assert {k: row[k] for k in ("query_id", "node_id", "score", "comment")} == {
        "query_id": qid, "node_id": "n1", "score": 4, "comment": "gut"}


def test_unknown_query_id_is_rejected(logs: FlywheelLogs) -> None:
    logs.record_search("q", mode="hybrid", source="query")
    with pytest.raises(QueryError) as err:
        logs.record_feedback(str(uuid.uuid4()), 4)
    assert (err.value.field, list(logs.feedback.read())) == ("query_id", [])


def test_malformed_query_id_is_rejected(logs: FlywheelLogs) -> None:
    with pytest.raises(QueryError) as err:
        logs.record_feedback("123", 4)
    assert err.value.field == "query_id"


@pytest.mark.parametrize("score", [0, 6, 2.5, "5", True])
def test_score_outside_1_to_5_is_rejected(logs: FlywheelLogs, score: object) -> None:
    qid = logs.record_search("q", mode="hybrid", source="query")
    with pytest.raises(QueryError) as err:
        logs.record_feedback(qid, score)  # type: ignore[arg-type]
    assert err.value.field == "score"


def test_query_id_from_an_earlier_run_is_known(tmp_path: Path) -> None:
    qid = FlywheelLogs(tmp_path).record_search("q", mode="hybrid", source="query")
    assert FlywheelLogs(tmp_path).record_feedback(qid, 5).query_id == qid


def test_query_id_logged_by_another_process_is_found(tmp_path: Path) -> None:
    ours, theirs = FlywheelLogs(tmp_path), FlywheelLogs(tmp_path)
    ours.record_search("first", mode="hybrid", source="query")
    ours.record_feedback(ours.record_search("second", mode="hybrid", source="query"), 3)  # loads the id set
    qid = theirs.record_search("later", mode="hybrid", source="chat")
    assert ours.record_feedback(qid, 5).query_id == qid


# --------------------------------------------------------------------------- report


def _fill(logs: FlywheelLogs) -> dict[str, str]:
    ids = {
        "fact1": logs.record_search("a", mode="hybrid", source="chat", strategy="FACT", hits=[HIT]),
        "fact2": logs.record_search("b", mode="hybrid", source="chat", strategy="FACT", hits=[HIT]),
        "decision": logs.record_search("c", mode="hybrid", source="chat", strategy="DECISION"),
        "query": logs.record_search("d", mode="semantic", source="query", hits=[HIT]),
    }
    logs.record_feedback(ids["fact1"], 4)
    logs.record_feedback(ids["fact2"], 5)
    logs.record_feedback(ids["decision"], 1)
    logs.record_feedback(ids["decision"], 2)          # a later rating replaces the earlier one
    logs.record_feedback(ids["query"], 3)
    logs.record_feedback(ids["fact1"], 2, node_id="n1")
    logs.record_feedback(ids["query"], 5, node_id="n1")
    return ids


def test_report_answers(logs: FlywheelLogs) -> None:
    _fill(logs)
    assert logs.feedback_report()["answers"] == {"count": 4, "mean_score": 3.5}


def test_report_by_strategy(logs: FlywheelLogs) -> None:
    _fill(logs)
    assert logs.feedback_report()["by_strategy"] == {
        "DECISION": {"count": 1, "mean_score": 2.0},
        "FACT": {"count": 2, "mean_score": 4.5},
        "none": {"count": 1, "mean_score": 3.0},
    }


def test_report_by_node(logs: FlywheelLogs) -> None:
    _fill(logs)
    assert logs.feedback_report()["by_node"] == {
        "n1": {"note_id": "qdrant", "title": "Qdrant", "count": 2, "mean_score": 3.5}}


def test_report_counts_unmatched_feedback(logs: FlywheelLogs) -> None:
    _fill(logs)
    logs.feedback.append({"query_id": str(uuid.uuid4()), "node_id": "generated_answer", "score": 5})
    report = logs.feedback_report()
    assert (report["feedback_count"], report["unmatched"]) == (7, 1)


def test_report_of_empty_logs(logs: FlywheelLogs) -> None:
    assert logs.feedback_report() == {"feedback_count": 0, "unmatched": 0,
                                      "answers": {"count": 0, "mean_score": None},
                                      "by_strategy": {}, "by_node": {},
                                      "reasons": {"wrong_source": 0, "missing_note": 0, "wrong_answer": 0},
                                      "remarks": []}


# --------------------------------------------------------------------------- whole records, rotation, modes

FSIZE_CHILD = r"""
import json, resource, signal, sys
from pathlib import Path
from mindnet.logs import FlywheelLogs
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)          # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
logs = FlywheelLogs(Path(sys.argv[1]))
query_id = logs.record_search("gross " * 400, mode="semantic", source="query")
try:
    logs.record_feedback(query_id, 5)
    print(json.dumps({"rated": True}))
except Exception as exc:
    print(json.dumps({"rated": False, "query_id": query_id, "unlogged": logs.unlogged(query_id),
                      "error": type(exc).__name__, "message": str(exc)}))
"""


def test_a_write_the_disk_refuses_leaves_no_half_record(tmp_path: Path) -> None:
    """A real short write then EFBIG (a file size limit in a child process), the path of a full disk: the search
    is still answered with its id, the file keeps only whole records, and the next record is readable."""
    import os
    import subprocess
    import sys
    logs = FlywheelLogs(tmp_path)
    first = logs.record_search("erste Suche", mode="semantic", source="query")
    size = logs.search_history.path.stat().st_size
    out = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(tmp_path), str(size + 1000)],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["rated"], result["error"]) == (False, "DataWriteError"), result
    assert "search_history.jsonl" in result["unlogged"] and "File too large" in result["unlogged"]
    assert "cannot be rated" in result["message"]
    assert logs.search_history.path.stat().st_size == size         # cut back: no partial line
    later = FlywheelLogs(tmp_path).record_search("danach", mode="semantic", source="query")
    assert [r["query_id"] for r in JsonlLog(logs.search_history.path).read()] == [first, later]
    assert FlywheelLogs(tmp_path).record_feedback(later, 4).score == 4


def test_a_torn_tail_does_not_swallow_the_next_record(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = JsonlLog(tmp_path / "a.jsonl")
    log.append({"a": 1})
    with open(log.path, "ab") as fh:
        fh.write(b'{"b": "abgeschnitt')          # a crash in the middle of a record
    log.append({"c": 3})
    with caplog.at_level(logging.WARNING):
        assert list(log.read()) == [{"a": 1}, {"c": 3}]
    assert "a.jsonl:2: skipping corrupt log line" in caplog.text


def test_the_history_is_rotated_and_ratings_still_find_their_search(tmp_path: Path) -> None:
    logs = FlywheelLogs(tmp_path, history_max_mb=2 / 1024, history_keep=2)     # rotated at 2 KiB
    ids = [logs.record_search(f"Suche {n} " + "x" * 300, mode="semantic", source="query") for n in range(30)]
    history = logs.search_history
    files = [p.name for p in history.files()]
    assert files == ["search_history.jsonl.2", "search_history.jsonl.1", "search_history.jsonl"]
    assert all(p.stat().st_size <= 2048 for p in history.files())
    kept = [r["query_id"] for r in history.read()]
    assert kept == ids[-len(kept):] and 4 < len(kept) < 30          # the newest, in order; the oldest dropped
    fresh = FlywheelLogs(tmp_path, history_max_mb=2 / 1024, history_keep=2)       # another process
    assert fresh.record_feedback(kept[0], 3).score == 3              # a search in the oldest rotated file
    logs.record_search("noch eine", mode="semantic", source="query")  # rotates again under `fresh`'s offset
    newest = logs.record_search("die neueste", mode="semantic", source="query")
    assert fresh.record_feedback(newest, 5).score == 5
    with pytest.raises(QueryError, match="unknown query_id"):
        fresh.record_feedback(ids[0], 1)                             # dropped with the oldest file
    assert fresh.feedback_report()["feedback_count"] == 2


def test_logs_are_private_whatever_the_umask(tmp_path: Path) -> None:
    import os
    old = os.umask(0o022)
    try:
        logs = FlywheelLogs(tmp_path / "logs")
        logs.record_feedback(logs.record_search("privat", mode="semantic", source="query"), 5)
    finally:
        os.umask(old)
    assert oct((tmp_path / "logs").stat().st_mode & 0o777) == "0o700"
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in (tmp_path / "logs").iterdir()} == {
        name: "0o600" for name in ("search_history.jsonl", "search_history.jsonl.lock", "feedback.jsonl",
                                   "feedback.jsonl.lock")}
