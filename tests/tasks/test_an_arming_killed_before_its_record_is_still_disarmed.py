"""Arming a deadline writes the set's member first, then the job's record: a task killed
between the two leaves a member the record does not name. Disarming that kind drops it
anyway, whatever its token, and leaves the job's other deadlines armed; a member that
fires leaves the job's index with it."""

from __future__ import annotations

import time

from pipeline.model.job import JobRecord
from pipeline.perform import deadlines as arming
from pipeline.store import Deadline, Store

JOBID = 4711


def members(store: Store) -> list[str]:
    return sorted(d.member for d in store.deadlines.pending())


def test_disarming_drops_an_arming_the_record_never_held(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=JOBID))
    arming.arm(store, JOBID, "teardown_after", 600, "post_run")
    now = time.time()
    # the killed task's arming: in the set, never in the record
    store.deadlines.add(Deadline(JOBID, "postrun_timeout", "post_run", now + 900), now=now)
    record = store.jobs.get(JOBID)
    assert record is not None and "postrun_timeout" not in record.deadlines
    arming.disarm(store, JOBID, "postrun_timeout")
    assert members(store) == [f"{JOBID}:teardown_after:post_run"]


def test_disarming_drops_every_token_of_the_kind(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=JOBID))
    arming.arm(store, JOBID, "node_prolog", 300)
    now = time.time()
    store.deadlines.add(Deadline(JOBID, "node_prolog", "stale@1", now + 5), now=now)
    arming.disarm(store, JOBID, "node_prolog")
    assert members(store) == []
    record = store.jobs.get(JOBID)
    assert record is not None and record.deadlines == {}


def test_a_fired_member_leaves_the_jobs_index(store: Store) -> None:
    now = time.time()
    store.deadlines.add(Deadline(JOBID, "setup_timeout", "t", now - 1), now=now)
    assert [d.member for d in store.deadlines.claim_due(now)] == [f"{JOBID}:setup_timeout:t"]
    assert store.client.smembers(store.keys.deadlines_of(JOBID)) == set()
