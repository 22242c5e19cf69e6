"""Ratings with reasons and a comment (the chat's "Bad answer" details): the record, the report and the CLI read
new records and the ones written before reasons existed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mindnet.cli import main
from mindnet.errors import QueryError
from mindnet.logs import FlywheelLogs


@pytest.fixture
def logs(tmp_path: Path) -> FlywheelLogs:
    return FlywheelLogs(tmp_path / "logs")


def test_reasons_and_comment_are_stored_in_the_feedback_record(logs: FlywheelLogs) -> None:
    qid = logs.record_search("Warum Qdrant?", mode="hybrid", source="chat", strategy="DECISION")
    logs.record_feedback(qid, 1, reasons=["wrong_source", "missing_note", "wrong_source"], comment=" fehlt ")
    (row,) = list(logs.feedback.read())
    assert (row["query_id"], row["score"], row["reasons"], row["comment"]) == \
        (qid, 1, ["wrong_source", "missing_note"], "fehlt")


def test_an_unknown_reason_is_refused_naming_the_known_ones(logs: FlywheelLogs) -> None:
    qid = logs.record_search("q", mode="hybrid", source="chat")
    with pytest.raises(QueryError, match="unknown reason 'boring'; use one of wrong_source, missing_note"):
        logs.record_feedback(qid, 1, reasons=["boring"])
    assert list(logs.feedback.read()) == []


def test_report_reads_old_and_new_records_and_the_last_rating_counts(logs: FlywheelLogs) -> None:
    old = logs.record_search("alt", mode="hybrid", source="chat", strategy="FACT")
    new = logs.record_search("neu", mode="hybrid", source="chat", strategy="FACT")
    logs.feedback.append({"query_id": old, "node_id": "generated_answer", "score": 2, "comment": None,
                          "timestamp": "2026-01-01T00:00:00.000+00:00"})       # written before reasons existed
    logs.record_feedback(new, 5)
    logs.record_feedback(new, 1, reasons=["wrong_answer"], comment="falsch")  # changed: replaces the 5
    report = logs.feedback_report()
    assert report["answers"] == {"count": 2, "mean_score": 1.5}
    assert report["reasons"] == {"wrong_source": 0, "missing_note": 0, "wrong_answer": 1}
    assert [(m["query_text"], m["score"], m["reasons"], m["comment"]) for m in report["remarks"]] == \
        [("neu", 1, ["wrong_answer"], "falsch")]


def test_feedback_report_command_shows_reasons_and_comments(logs: FlywheelLogs, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    qid = logs.record_search("Wo ist die Notiz?", mode="hybrid", source="chat", strategy="FACT")
    logs.feedback.append({"query_id": str(uuid.uuid4()), "score": 4})        # an old record of a lost search
    logs.record_feedback(qid, 1, reasons=["missing_note", "wrong_source"], comment="die Projektnotiz fehlt")
    monkeypatch.setenv("MINDNET_LOG_DIR", str(logs.log_dir))
    assert main(["feedback-report"]) == 0
    out = capsys.readouterr().out
    assert "Reasons given for answers: wrong source 1, missing note 1" in out
    assert "Wo ist die Notiz?" in out and "die Projektnotiz fehlt" in out
    assert main(["feedback-report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["remarks"][0]["reasons"] == ["missing_note", "wrong_source"]
    assert report["unmatched"] == 1
