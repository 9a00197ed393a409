"""Due deadlines fire once through sweep → fire; stale ones do nothing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery

from pipeline.perform import deadlines as arming
from pipeline.platform.sending import settings_of
from pipeline.platform.task import PipelineTask
from pipeline.store import Deadline, JobRecord, Keys, Store
from pipeline.tasks import timeouts
from pipeline.tasks.housekeeping import redeliver
from tests.platform.results import result_of


def store_of(app: Celery) -> Store:
    return Store(
        redis.Redis.from_url(app.conf.broker_url),
        Keys(settings_of(app).pipeline.key_prefix),
    )


@timeouts.handles("probe_timeout")
def _probe(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    task.store.client.rpush(f"probe-fired:{record.jobid}", deadline.token)


def fired(store: Store, jobid: int) -> list[bytes]:
    result: Any = store.client.lrange(f"probe-fired:{jobid}", 0, -1)
    return list(result)


def arm_overdue(store: Store, jobid: int, token: str) -> None:
    """Track ``jobid`` with a probe deadline that was due a second ago."""
    store.jobs.create(JobRecord(jobid=jobid))
    arming.arm(store, jobid, "probe_timeout", -1.0, token)


def wait_for(done: Callable[[], bool], state: Callable[[], str], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, state()
        time.sleep(0.02)


def test_a_due_deadline_fires_its_handler_once_and_is_disarmed(
    celery_app: Celery, worker: None
) -> None:
    store = store_of(celery_app)
    arm_overdue(store, 501, "tok1")
    assert result_of(timeouts.sweep) >= 1

    def disarmed() -> bool:
        record = store.jobs.get(501)
        assert record is not None
        return bool(fired(store, 501)) and "probe_timeout" not in record.deadlines

    wait_for(disarmed, lambda: f"fired={fired(store, 501)} record={store.jobs.get(501)}")
    assert fired(store, 501) == [b"tok1"]
    noted = [e.task_id for e in store.ledger.unsettled(1000)]
    assert not [i for i in noted if i.startswith("timeouts.fire:501:")]  # crossed out


def test_a_deadline_claimed_by_a_sweep_killed_before_sending_fires_through_redeliver(
    celery_app: Celery, worker: None
) -> None:
    store = store_of(celery_app)
    arm_overdue(store, 504, "tok4")
    # what a sweep killed between its claim and its send leaves: the claim, noted
    now = time.time()  # noted as due for a resend at once, not after resend_after
    store.deadlines.claim_due(now, note_as=timeouts.FIRE, resend_after_s=-300)
    assert store.deadlines.pending() == []
    assert result_of(redeliver) >= 1
    wait_for(lambda: fired(store, 504) == [b"tok4"], lambda: f"fired={fired(store, 504)}")


def test_a_stale_deadline_does_nothing(celery_app: Celery, worker: None) -> None:
    store = store_of(celery_app)
    store.jobs.create(JobRecord(jobid=502))
    arming.arm(store, 502, "probe_timeout", 3600.0, "old")
    arming.arm(store, 502, "probe_timeout", 3600.0, "new")
    ran = result_of(timeouts.fire, jobid=502, kind="probe_timeout", token="old", due=0.0)
    assert ran is False
    assert fired(store, 502) == []


def test_a_deadline_of_a_forgotten_job_does_nothing(celery_app: Celery, worker: None) -> None:
    ran = result_of(timeouts.fire, jobid=503, kind="probe_timeout", token="x", due=0.0)
    assert ran is False


def test_the_beat_schedule_sweeps_every_second(celery_app: Celery) -> None:
    entry = celery_app.conf.beat_schedule["deadline-sweep"]
    assert (entry["task"], entry["schedule"]) == ("timeouts.sweep", 1.0)
    assert entry["task"] in celery_app.tasks
