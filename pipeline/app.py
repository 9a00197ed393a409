"""The Celery application: ``celery -A pipeline.app worker -Q lifecycle,timeouts,housekeeping``.

Settings come from ``$CORAL2_PIPELINE_CONFIG`` and the environment
(``pipeline/settings.py``); an invalid configuration stops the process at
import with the list of problems.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Celery

from beat_schedules.schedule import SCHEDULE
from pipeline.celery_config import celery_config
from pipeline.settings import Settings, load_settings
from pipeline.tasks.base import dispatch, store_of


def create_app(settings: Settings | None = None, *, set_current: bool = True) -> Celery:
    """Return a configured Celery app with every pipeline task registered.

    ``set_current=False`` makes a sender-only app that leaves the process's
    current app alone (command-line tools inside a larger process, tests).
    """
    settings = settings or load_settings()
    celery = Celery("coral2_pipeline", set_as_current=set_current)
    if set_current:
        celery.set_default()  # worker threads resolve shared tasks through the default app
    celery.conf.update(celery_config(settings))
    celery.conf.beat_schedule = SCHEDULE
    import pipeline.tasks.deadlines
    import pipeline.tasks.dws
    import pipeline.tasks.housekeeping
    import pipeline.tasks.observe
    import pipeline.tasks.timeouts  # noqa: F401

    # bind the shared tasks now: send_task() routes by the task found in the app's registry
    # without finalizing it, so an unfinalized app would send every task to the default queue
    celery.finalize(auto=True)
    return celery


def sender(celery: Celery) -> Callable[[str, dict[str, Any]], None]:
    """Return how the hooks and the watcher enqueue a task by name: fire and forget.

    It goes through :func:`pipeline.tasks.base.dispatch`: the message is
    noted in the ledger (so one the broker loses is sent again), then sent
    through the registered task's ``apply_async``, so the task's own options
    apply — its queue, and ``keep_result``: ``send_task`` would subscribe
    this process to a result channel for every message it sends and nobody
    would ever read it.
    """

    def send(name: str, kwargs: dict[str, Any]) -> None:
        dispatch(celery, store_of(celery), name, kwargs)

    return send


app = create_app()
