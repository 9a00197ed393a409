"""A dispatched task message stays in the ledger until its task ends for good: success and
permanent failure cross it out (after any retries); a bug leaves it, to be sent again later."""

from __future__ import annotations

import time
import uuid
from typing import Any

from celery import Celery

from pipeline.platform.sending import dispatch, store_of


def run_dispatched(app: Celery, name: str, **kwargs: Any) -> str:
    """Dispatch ``name`` as the hooks and the watcher do; wait until its task has ended."""
    task_id = dispatch(app, store_of(app), name, kwargs)
    app.AsyncResult(task_id).get(timeout=30, propagate=False)
    return task_id


def in_ledger(app: Celery, task_id: str) -> bool:
    store = store_of(app)
    return store.client.hget(store.keys.ledger, task_id) is not None


def test_a_task_that_succeeds_after_retries_is_crossed_out(
    celery_app: Celery, worker: None
) -> None:
    key = f"retried:{uuid.uuid4().hex}"
    task_id = run_dispatched(celery_app, "probe.flaky", key=key, failures=2)
    assert store_of(celery_app).client.get(key) == b"3"
    assert not in_ledger(celery_app, task_id)


def test_a_permanent_failure_is_crossed_out(celery_app: Celery, worker: None) -> None:
    task_id = run_dispatched(celery_app, "probe.permanent", jobid=78)
    assert not in_ledger(celery_app, task_id)


def test_a_bug_leaves_the_entry_to_be_sent_again_later(celery_app: Celery, worker: None) -> None:
    key = f"bug:{uuid.uuid4().hex}"
    task_id = run_dispatched(celery_app, "probe.broken", key=key)
    store = store_of(celery_app)
    assert store.client.get(key) == b"1"
    assert in_ledger(celery_app, task_id)
    due = store.client.zscore(store.keys.ledger_due, task_id)
    assert due is not None and due > time.time()  # later: resend_after from its send
    store.ledger.done(task_id)
