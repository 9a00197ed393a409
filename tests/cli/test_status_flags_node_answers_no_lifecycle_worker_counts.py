"""Node answers wait on their stream until a lifecycle worker counts them: ``status`` shows how
many wait and since when, and flags CRITICAL, naming the worker to start, once the oldest has
waited past the outbox's limit (its jobs stay held at RUN meanwhile)."""

from __future__ import annotations

import time
import uuid

from pipeline.cli.status_flags import CRITICAL, OUTBOX_LATE_S, pipeline_flags
from pipeline.store import Store
from pipeline.store.report import pipeline_view


def test_an_answer_left_uncounted_is_flagged_critical(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    appended_ms = int((time.time() - OUTBOX_LATE_S - 5) * 1000)
    store.client.xadd(store.keys.answers, {"task": "job.prolog_done"}, id=f"{appended_ms}-0")
    view = pipeline_view(store)
    assert view.answers_waiting == 1
    assert view.answers_oldest_at == appended_ms / 1000
    flags = [f for f in pipeline_flags(view, 120.0) if "node answer" in f.text]
    assert [f.severity for f in flags] == [CRITICAL]
    assert "coral2-pipeline worker" in flags[0].text


def test_answers_just_appended_are_not_flagged(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    store.client.xadd(store.keys.answers, {"task": "job.prolog_done"})
    assert not [f for f in pipeline_flags(pipeline_view(store), 120.0) if "node answer" in f.text]
