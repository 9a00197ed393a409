"""Temporary errors retry with backoff; permanent errors and poison messages are recorded.

A failed run is acknowledged and its ledger entry kept, so the message comes back only as
``housekeeping.redeliver`` sends it again, marked resent: the tests send such copies."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

import redis
from celery import Celery

from pipeline.store.backlog import RESENT_HEADER
from tests.platform.probe_tasks import broken, flaky, locked, permanent

#: The header of a copy the ledger sends again.
RESENT = {RESENT_HEADER: True}


def client_of(app: Celery) -> redis.Redis:
    return redis.Redis.from_url(app.conf.broker_url)


def test_a_temporary_error_is_retried_until_the_task_succeeds(
    celery_app: Celery, worker: None
) -> None:
    key = f"flaky:{uuid.uuid4().hex}"
    assert flaky.delay(key, 3).get(timeout=30) == 4


def test_a_permanent_error_is_recorded_and_not_retried(celery_app: Celery, worker: None) -> None:
    result = permanent.delay(jobid=77)
    assert result.get(timeout=30) is None
    raw = client_of(celery_app).hget("celerytest:failures", result.id)
    assert raw is not None
    entry = json.loads(raw)
    assert (entry["task"], entry["jobid"]) == ("probe.permanent", 77)
    assert "cannot be helped" in entry["reason"]
    assert client_of(celery_app).get(f"celerytest:attempts:{result.id}") == b"1"


def test_a_poison_message_is_dropped_after_max_attempts(celery_app: Celery, worker: None) -> None:
    task_id = uuid.uuid4().hex
    client_of(celery_app).set(f"celerytest:attempts:{task_id}", 20)
    key = f"poison:{task_id}"
    result = flaky.apply_async((key, 0), task_id=task_id, headers=RESENT)
    assert result.get(timeout=30) is None
    assert client_of(celery_app).get(key) is None
    entry = json.loads(client_of(celery_app).hget("celerytest:failures", task_id) or "{}")
    assert "dropped after 20 failed runs" in entry["reason"]


def wait_for(predicate: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_message_started_again_and_again_without_failing_is_never_dropped(
    celery_app: Celery, worker: None
) -> None:
    client = client_of(celery_app)
    task_id = uuid.uuid4().hex  # every redelivery of one message keeps its id
    key = f"churn:{task_id}"
    for run in range(25):  # one at a time: each run's own key shows it ran
        flaky.apply_async((f"{key}:{run}", 0), task_id=task_id)
        wait_for(lambda run=run: client.get(f"{key}:{run}") == b"1")
    assert client.hget("celerytest:failures", task_id) is None


def test_each_failed_run_is_counted_and_the_twenty_first_start_drops_it(
    celery_app: Celery, worker: None
) -> None:
    client = client_of(celery_app)
    task_id = uuid.uuid4().hex
    key = f"bug:{task_id}"
    for run in range(1, 21):  # one at a time: the next is sent once this one has failed
        broken.apply_async((key,), task_id=task_id, headers=RESENT)
        wait_for(lambda run=run: int(client.get(f"celerytest:attempts:{task_id}") or 0) == run)
    broken.apply_async((key,), task_id=task_id, headers=RESENT)
    wait_for(lambda: client.hget("celerytest:failures", task_id) is not None)
    assert client.get(key) == b"20"  # the 21st start ran nothing
    entry = json.loads(client.hget("celerytest:failures", task_id) or "{}")
    assert "dropped after 20 failed runs" in entry["reason"]


def test_lifecycle_tasks_of_one_job_never_overlap(celery_app: Celery, worker: None) -> None:
    key = f"busy:{uuid.uuid4().hex}"
    results = [locked.delay(jobid=5, key=key) for _ in range(8)]
    for result in results:
        result.get(timeout=60)
    assert client_of(celery_app).get(key + ":overlaps") is None
