"""Workers that fall behind leave messages in their queue past ``resend_after``. The ledger
does not send those again — a copy behind each would feed the backlog — but looks at them
again later; a message first sent before the oldest one still waiting has left the queue
(taken, or lost), and is sent again as before. Once the queue has moved past the waiting
ones, they are sent again too if they are still without an outcome."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.platform.sending import send
from pipeline.store import Store
from tests.tasks.eager_app import eager_app, store_of_app

TASK = "job.answers_complete"  # any lifecycle task: no worker serves this queue


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    queue = f"lifecycle-{uuid.uuid4().hex[:8]}"
    return eager_app(
        tmp_path, redis_url, kube[0].url, CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE=queue
    )


def queue_of(app: Celery) -> str:
    return str(app.conf.coral2_settings.pipeline.queues.lifecycle)


def backlog(app: Celery, store: Store) -> dict[str, str]:
    """Three messages due for a resend: ``lost`` never reached the queue; ``older`` and
    ``newer``, first sent after it, still wait there."""
    now = time.time()
    ids = {}
    for name, first_sent, pushed in (
        ("lost", now - 20, False),
        ("older", now - 10, True),
        ("newer", now, True),
    ):
        task_id = ids[name] = str(uuid.uuid4())
        kwargs = {"jobid": 1000 + len(ids)}
        store.ledger.note(task_id, TASK, kwargs, now=first_sent, resend_after_s=0)
        if pushed:
            send(app, TASK, kwargs, task_id, None, first_sent=first_sent)
    return ids


def redeliver(app: Celery) -> int:
    return int(app.tasks["housekeeping.redeliver"].apply().get())


def due_at(store: Store, task_id: str) -> float:
    return float(store.client.zscore(store.keys.ledger_due, task_id))  # type: ignore[arg-type]


def test_only_the_message_that_left_the_queue_is_sent_again(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    store = store_of_app(app)
    ids = backlog(app, store)
    before = time.time()
    with caplog.at_level(logging.WARNING, logger="coral2_pipeline.housekeeping"):
        assert redeliver(app) == 1
    assert store.client.llen(queue_of(app)) == 3  # the two waiting, and the lost one's copy
    resend_after = app.conf.coral2_settings.pipeline.resend_after
    for name in ("older", "newer"):
        assert due_at(store, ids[name]) >= before + resend_after  # looked at again later
    said = [r.getMessage() for r in caplog.records if "still wait there" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"2 message(s) on {queue_of(app)}"), said


def test_waiting_messages_are_sent_again_once_the_queue_has_moved_past_them(
    app: Celery,
) -> None:
    store = store_of_app(app)
    ids = backlog(app, store)
    assert redeliver(app) == 1
    # a worker takes every message and dies before it records them: the queue is empty
    store.client.delete(queue_of(app))
    now = time.time()
    for task_id in ids.values():
        store.ledger.postpone(task_id, now - 1, now)  # due again
    assert redeliver(app) == 3
    assert store.client.llen(queue_of(app)) == 3
