"""A task message noted in the ledger but never delivered (the broker lost it) runs after
``housekeeping.redeliver``; one that is not yet due is left alone."""

from __future__ import annotations

import time
import uuid

from celery import Celery

from pipeline.platform.sending import store_of
from pipeline.tasks.housekeeping import redeliver
from tests.platform.results import result_of


def wait_for(condition: object, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_lost_message_runs_once_redeliver_finds_it_due(celery_app: Celery, worker: None) -> None:
    store = store_of(celery_app)
    key = f"lost:{uuid.uuid4().hex}"
    task_id = uuid.uuid4().hex
    # what a worker killed between BRPOP and recording the message leaves: a ledger entry only
    store.ledger.note(
        task_id, "probe.flaky", {"key": key, "failures": 0}, now=time.time() - 300, resend_after_s=1
    )
    assert result_of(redeliver) >= 1
    wait_for(lambda: store.client.get(key) == b"1", "the lost task to run")
    wait_for(lambda: store.client.hget(store.keys.ledger, task_id) is None, "its outcome")


def test_a_message_not_yet_due_is_not_sent_again(celery_app: Celery, worker: None) -> None:
    store = store_of(celery_app)
    key = f"waiting:{uuid.uuid4().hex}"
    task_id = uuid.uuid4().hex
    store.ledger.note(
        task_id, "probe.flaky", {"key": key, "failures": 0}, now=time.time(), resend_after_s=600
    )
    result_of(redeliver)
    assert store.client.get(key) is None
    assert store.client.hget(store.keys.ledger, task_id) is not None
    store.ledger.done(task_id)


def test_a_message_sent_again_after_failing_for_good_is_dropped_as_poison(
    celery_app: Celery, worker: None
) -> None:
    store = store_of(celery_app)
    key = f"poison:{uuid.uuid4().hex}"
    task_id = uuid.uuid4().hex
    # what twenty failed runs leave: the entry kept (each failure acknowledged), counted
    sent = time.time() - 300
    store.ledger.note(task_id, "probe.broken", {"key": key}, now=sent, resend_after_s=1)
    store.client.set(store.keys.attempts(task_id), 20)
    assert result_of(redeliver) >= 1
    wait_for(lambda: store.client.hget(store.keys.failures, task_id), "the message dropped")
    assert store.client.get(key) is None  # the copy ran nothing
    wait_for(lambda: store.client.hget(store.keys.ledger, task_id) is None, "its outcome")
