"""`coral2-pipeline status` sums up the whole pipeline and flags what an admin should check."""

from __future__ import annotations

import json
import time

from pipeline.store import JobRecord, OutboxMessage, Store
from tests.cli.status_helpers import Status, as_json


def lead(store: Store) -> None:
    """A leading watcher and a beat that just ticked: what a healthy pipeline has."""
    store.client.set(store.keys.watcher_leader, "watcher-a", px=60_000)
    store.client.set(store.keys.beat_tick, f"{time.time()} beat-a")


def test_an_idle_pipeline_with_a_leading_watcher_has_nothing_to_look_at(
    status: Status, aimed: Store
) -> None:
    lead(aimed)
    code, out, _ = status()
    assert code == 0
    assert "watcher-a" in out
    assert "nothing to look at" in out


def test_no_leading_watcher_is_flagged(status: Status, aimed: Store) -> None:
    code, report = as_json(status)
    assert code == 2
    assert report["watcher_leader"] is None
    assert any("no watcher leads" in flag for flag in report["critical"])
    assert any("no watcher leads" in flag for flag in report["flags"])


def test_jobs_are_counted_by_state_and_the_stalest_come_first(status: Status, aimed: Store) -> None:
    lead(aimed)
    now = time.time()
    aimed.jobs.create(JobRecord(jobid=1, state="Setup:ready", observed_at=now - 5, observed_rv="1"))
    aimed.jobs.create(JobRecord(jobid=2, state="Setup:ready", observed_at=now - 9, observed_rv="2"))
    aimed.jobs.create(JobRecord(jobid=3))  # created, never observed
    aimed.client.sadd(aimed.keys.jobs_index, "4")  # tracked, its record gone
    code, report = as_json(status)
    assert code == 0, report["flags"]
    assert report["tracked"] == 4
    assert report["states"] == {"Setup:ready": 2, "(not observed yet)": 1, "(no record)": 1}
    assert [row[0] for row in report["stalest"]] == [3, 4, 2, 1]


def test_a_lost_observe_a_stuck_outbox_an_old_sent_task_and_failures_are_flagged(
    status: Status, aimed: Store
) -> None:
    lead(aimed)
    now = time.time()
    aimed.jobs.create(JobRecord(jobid=4, state="Proposal:ready", observed_at=now, observed_rv="7"))
    aimed.client.hset(aimed.keys.workflow_seen, "4", f"8 {now - 30:.3f}")  # rv 8 never read
    aimed.outbox.append(OutboxMessage("memo", 4, {"id": 4, "memo": {"rabbits": "rabbit1"}}))
    aimed.outbox.append(OutboxMessage("memo", 5, {"id": 5, "memo": {"rabbits": "rabbit2"}}))
    aimed.outbox.read("bridge-1", count=1)  # one taken, not acknowledged
    aimed.ledger.note("old", "dws.setup", {"jobid": 4}, now=now - 600, resend_after_s=30)
    failure = {"task": "dws.create", "jobid": 6, "reason": "refused", "time": now}
    aimed.client.hset(aimed.keys.failures, "t-6", json.dumps(failure))
    code, report = as_json(status)
    assert code == 1 and report["status"] == "WARNING" and report["critical"] == []
    assert [row[:2] for row in report["unobserved"]] == [[4, "8"]]
    assert (report["outbox_backlog"], report["outbox_unacked"]) == (2, 1)
    assert report["ledger_pending"] == 1
    assert report["ledger_oldest"][0]["name"] == "dws.setup"
    assert [f["reason"] for f in report["recent_failures"]] == ["refused"]
    flags = " | ".join(report["flags"])
    assert "unobserved for over 10 s" in flags
    assert "no outcome for over 120 s (pipeline.resend_after)" in flags
    assert "failed for good" in flags


def test_rabbits_that_are_not_ready_are_listed(status: Status, aimed: Store) -> None:
    lead(aimed)
    health = {"status": "Degraded", "state": "Enabled", "not_ready": ["compute07"]}
    aimed.client.hset(aimed.keys.rabbits, "rabbit3", json.dumps(health))
    aimed.client.hset(
        aimed.keys.rabbits,
        "rabbit4",
        json.dumps({"status": "Ready", "state": "Enabled", "not_ready": []}),
    )
    code, out, _ = status()
    assert code == 0
    assert "2 seen, 1 not Ready" in out
    assert "rabbit3" in out and "compute07" in out
