"""dws.resync re-observes the tracked jobs nobody has observed for RESYNC_AFTER_S — only those.

Run every second by beat, it spreads the safety-net observes out instead of
queueing one per tracked job at once in front of real transitions. A job
whose delete was asked is still tracked until its Workflow is seen gone; a
finished job is not tracked at all.
"""

from __future__ import annotations

import time

import redis
from celery import Celery

from pipeline.store import JobRecord, Keys, Store
from pipeline.tasks.observe import RESYNC_AFTER_S, resync


def test_resync_enqueues_the_stale_tracked_jobs_and_leaves_the_fresh_and_the_finished(
    celery_app: Celery, worker: None
) -> None:
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url), Keys(celery_app.conf.coral2_key_prefix)
    )
    for jobid in store.jobs.jobids():  # other tests' records are not this test's business
        store.jobs.update(jobid, lambda r: r.model_copy(update={"observed_at": time.time()}))
    now = time.time()
    stale = now - RESYNC_AFTER_S - 1
    store.jobs.create(JobRecord(jobid=951, workflow="fluxjob-951", observed_at=now))
    store.jobs.create(JobRecord(jobid=952, workflow="fluxjob-952", observed_at=stale))
    store.jobs.create(JobRecord(jobid=953, workflow="fluxjob-953", deleted=True, observed_at=stale))
    store.jobs.create(JobRecord(jobid=954, workflow="fluxjob-954", observed_at=stale))
    store.jobs.finish(954, retain_s=60)
    assert resync.delay().get(timeout=30) == 2
    deadline = time.monotonic() + 30
    while {952, 953} & set(store.jobs.jobids()):
        assert time.monotonic() < deadline, "the stale jobs were never observed"
        time.sleep(0.05)
    for gone in (952, 953):  # observed: no Workflow, so finished
        record = store.jobs.get(gone)
        assert record is not None and record.state == "deleted"
    fresh = store.jobs.get(951)
    assert fresh is not None and fresh.state is None  # not observed: no Workflow read
    finished = store.jobs.get(954)
    assert finished is not None and finished.state is None
