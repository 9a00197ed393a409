"""`coral2-pipeline status` flags a job whose Workflow has waited on DWS in one state,
with no change, past that state's timeout (ten minutes where the state has none), as a
Proposal stuck for 19 minutes once read "nothing to look at"; a job waiting on Flux
(its state ready) is not flagged however long it runs."""

from __future__ import annotations

import time

import pytest

from pipeline.store import JobRecord, Store
from tests.cli.status_helpers import Status, as_json


def lead(store: Store) -> None:
    store.client.set(store.keys.watcher_leader, "watcher-a", px=60_000)
    store.client.set(store.keys.beat_tick, f"{time.time()} beat-a")


def test_a_proposal_stuck_for_19_minutes_is_a_warning(status: Status, aimed: Store) -> None:
    lead(aimed)
    now = time.time()
    stuck = JobRecord(jobid=8, state="Proposal:DriverWait", observed_at=now - 19 * 60)
    running = JobRecord(jobid=9, state="PreRun:ready", observed_at=now - 5 * 3600)
    aimed.jobs.create(stuck)
    aimed.jobs.create(running)
    code, report = as_json(status)
    assert (code, report["status"]) == (1, "WARNING")
    [flag] = report["flags"]
    assert "job 8 in Proposal:DriverWait for 19 min with no change" in flag
    assert "kubectl get workflow fluxjob-8" in flag


def test_a_state_with_its_own_timeout_is_flagged_past_it(
    status: Status, aimed: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    lead(aimed)
    monkeypatch.setenv("CORAL2_PIPELINE_RABBIT__SETUP_TIMEOUT", "120")
    aimed.jobs.create(JobRecord(jobid=5, state="Setup:pending", observed_at=time.time() - 300))
    code, report = as_json(status)
    assert code == 1 and "job 5 in Setup:pending for 5 min" in report["flags"][0]
    monkeypatch.setenv("CORAL2_PIPELINE_RABBIT__SETUP_TIMEOUT", "0")  # off: ten minutes
    code, report = as_json(status)
    assert (code, report["flags"]) == (0, [])
