"""dws.resync re-observes the tracked jobs nobody has observed for RESYNC_AFTER_S — only those.

Run every second by beat, it spreads the safety-net observes out instead of
queueing one per tracked job at once in front of real transitions.
"""

from __future__ import annotations

import time

import redis
from celery import Celery

from pipeline.store import JobRecord, Keys, Store
from pipeline.tasks.observe import RESYNC_AFTER_S, resync


def test_resync_enqueues_the_stale_job_and_leaves_the_fresh_and_the_deleted(
    celery_app: Celery, worker: None
) -> None:
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url), Keys(celery_app.conf.coral2_key_prefix)
    )
    for jobid in store.jobs.jobids():  # other tests' records are not this test's business
        store.jobs.update(jobid, lambda r: r.model_copy(update={"observed_at": time.time()}))
    now = time.time()
    store.jobs.create(JobRecord(jobid=951, workflow="fluxjob-951", observed_at=now))
    store.jobs.create(
        JobRecord(jobid=952, workflow="fluxjob-952", observed_at=now - RESYNC_AFTER_S - 1)
    )
    store.jobs.create(JobRecord(jobid=953, workflow="fluxjob-953", deleted=True))
    assert resync.delay().get(timeout=30) == 1
    deadline = time.monotonic() + 30
    while (record := store.jobs.get(952)) is not None and record.state != "deleted":
        assert time.monotonic() < deadline, "the stale job was never observed"
        time.sleep(0.05)
    fresh = store.jobs.get(951)
    assert fresh is not None and fresh.state is None  # not observed: no Workflow read
