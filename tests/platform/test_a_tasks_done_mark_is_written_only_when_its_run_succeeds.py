"""What a task body hands ``after_work`` — the marks that say its work is done — is written
in the round trip that settles the run, and only when the run succeeds: a run that retries,
fails for good or fails as a bug leaves no mark, and a retried run that then succeeds
leaves exactly one."""

from __future__ import annotations

import uuid

import pytest
from celery import Celery

from pipeline.platform.sending import dispatch, store_of


def runs_and_marks(app: Celery, ending: str) -> tuple[int, int]:
    """Dispatch ``probe.marked`` ending as ``ending``, wait for it; its (runs, marks)."""
    key = f"marked:{uuid.uuid4().hex}"
    task_id = dispatch(app, store_of(app), "probe.marked", {"key": key, "ending": ending})
    app.AsyncResult(task_id).get(timeout=30, propagate=False)
    client = store_of(app).client
    return int(client.get(key + ":runs") or 0), int(client.get(key + ":marks") or 0)


@pytest.mark.parametrize(
    ("ending", "runs", "marks"),
    [("ok", 1, 1), ("retry-once", 2, 1), ("permanent", 1, 0), ("bug", 1, 0)],
)
def test_the_mark_follows_a_successful_run_only(
    celery_app: Celery, worker: None, ending: str, runs: int, marks: int
) -> None:
    assert runs_and_marks(celery_app, ending) == (runs, marks)
