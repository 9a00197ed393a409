"""`coral2-pipeline status -j` shows what the store holds about one job, and flags trouble."""

from __future__ import annotations

import json
import time

import pytest

from pipeline.model.jobid import encode_f58
from pipeline.store import JobRecord, OutboxMessage, Store
from pipeline.store.deadlines import Deadline
from tests.cli.status_helpers import Status, as_json


@pytest.fixture
def job_in_prerun(aimed: Store) -> int:
    """Job 7 in PreRun: its record, marks, a queued outbox message, a deadline, a sent task."""
    now = time.time()
    aimed.jobs.create(
        JobRecord(
            jobid=7,
            workflow="fluxjob-7",
            hosts=["compute01", "compute02"],
            rabbits=["rabbit1"],
            state="PreRun:pending",
            observed_at=now - 2,
            observed_rv="40",
        )
    )
    aimed.outbox.append_all_once(
        7, [(OutboxMessage("prolog-remove", 7, {"id": 7, "variables": {}}), "prolog-remove")]
    )
    aimed.deadlines.add(Deadline(7, "prolog-timeout", "t1", now + 300))
    aimed.ledger.note("task-a", "dws.observe", {"jobid": 7}, now=now - 1, resend_after_s=30)
    aimed.ledger.note("task-b", "dws.observe", {"jobid": 8}, now=now - 1, resend_after_s=30)
    aimed.client.hset(aimed.keys.workflow_seen, "7", f"41 {now - 0.5:.3f}")
    return 7


def test_the_json_report_holds_the_record_marks_outbox_deadlines_and_sent_tasks(
    status: Status, job_in_prerun: int
) -> None:
    code, report = as_json(status, "-j", encode_f58(job_in_prerun))
    assert code == 0, report["flags"]
    assert report["record"]["state"] == "PreRun:pending"
    assert report["record"]["hosts"] == ["compute01", "compute02"]
    assert report["tracked"] is True
    assert report["marks"] == ["prolog-remove"]
    assert [d["message"]["kind"] for d in report["outbox"]] == ["prolog-remove"]
    assert [(d["kind"], d["token"]) for d in report["deadlines"]] == [("prolog-timeout", "t1")]
    assert [e["task_id"] for e in report["ledger"]] == ["task-a"]  # job 8's is not job 7's
    assert report["seen"][0] == "41"
    assert report["lock_ttl_ms"] is None


def test_the_table_names_the_job_in_both_forms_and_folds_its_hosts(
    status: Status, aimed: Store, job_in_prerun: int
) -> None:
    aimed.locks.acquire(job_in_prerun, ttl_s=30)
    code, out, _ = status("-j", str(job_in_prerun))
    assert code == 0
    assert f"job 7 ({encode_f58(7)})" in out
    assert "compute[01-02]" in out
    assert "held, expires in" in out
    assert "nothing to look at" in out


def test_a_failed_task_an_unobserved_event_and_a_task_without_outcome_are_flagged(
    status: Status, aimed: Store, job_in_prerun: int
) -> None:
    failure = {"task": "dws.setup", "jobid": 7, "reason": "boom", "time": time.time()}
    aimed.client.hset(aimed.keys.failures, "task-c", json.dumps(failure))
    aimed.client.hset(aimed.keys.workflow_seen, "7", f"41 {time.time() - 60:.3f}")
    aimed.ledger.note("old", "node.prolog", {"jobid": 7}, now=time.time() - 600, resend_after_s=5)
    code, report = as_json(status, "-j", "7")
    assert code == 1 and report["status"] == "WARNING"
    assert [f["reason"] for f in report["failures"]] == ["boom"]
    assert any("went unobserved" in flag for flag in report["flags"])
    assert any("failed for good" in flag for flag in report["flags"])
    assert any("(node.prolog) have had no outcome" in flag for flag in report["flags"])


def test_an_unreadable_record_is_reported_not_raised(status: Status, aimed: Store) -> None:
    aimed.client.set(aimed.keys.job(9), '{"jobid": "nine"}')
    code, out, err = status("-j", "9")
    assert code == 2 and out.startswith("CRITICAL: its record cannot be read")
    assert "unreadable" in out
    assert "Traceback" not in out + err


def test_an_unreadable_outbox_entry_is_left_out_not_raised(
    status: Status, aimed: Store, job_in_prerun: int
) -> None:
    aimed.client.xadd(aimed.keys.outbox, {"kind": "bogus", "jobid": "7", "payload": "{"})
    code, report = as_json(status, "-j", str(job_in_prerun))
    assert code == 0, report["flags"]
    assert [d["message"]["kind"] for d in report["outbox"]] == ["prolog-remove"]
