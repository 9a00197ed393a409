"""dws.resync's every-second pass reads only the jobs whose notes fell due; its full pass
(beat: every two minutes) reads every job's notes, so an unobserved event whose due time
was never written — noted by an older version, or its write lost — still gets observed."""

from __future__ import annotations

import time

import redis
from celery import Celery

from pipeline.platform.sending import settings_of
from pipeline.store import Keys, Store
from pipeline.store.resync import LOST_AFTER_S
from pipeline.tasks.observe import resync
from tests.platform.results import result_of


def test_the_full_pass_observes_what_the_due_pass_cannot_see(
    celery_app: Celery, worker: None
) -> None:
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url),
        Keys(settings_of(celery_app).pipeline.key_prefix),
    )
    for jobid in store.jobs.jobids():  # other tests' jobs are not this test's business
        store.jobs.finish(jobid, retain_s=60)
    store.client.delete(store.keys.workflow_seen, store.keys.resync_due)
    late = time.time() - LOST_AFTER_S - 5
    # an event of a job with no record, noted with no due time
    store.client.hset(store.keys.workflow_seen, "44971", f"4 {late:.3f}")
    assert result_of(resync) == 0
    assert result_of(resync, full=True) == 1
    deadline = time.monotonic() + 30
    while store.client.hexists(store.keys.workflow_seen, "44971"):  # observed: no Workflow
        assert time.monotonic() < deadline, "the job was never observed"
        time.sleep(0.05)
