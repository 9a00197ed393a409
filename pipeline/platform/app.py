"""The Celery application of the pipeline, built from the settings.

The task modules attach their tasks to it as Celery's ``include`` (every
process that builds the app imports them), so this room knows them by name
only and the tasks sit above it. ``pipeline.app`` is the process entry point
``celery -A pipeline.app`` loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Celery

from beat_schedules.schedule import SCHEDULE, heartbeats
from pipeline.platform import nodework, supervision  # noqa: F401  (its signal handlers)
from pipeline.platform.config import celery_config
from pipeline.platform.sending import dispatch, store_of
from pipeline.platform.signing import secure
from pipeline.settings import Settings, load_settings

#: The modules whose tasks every pipeline process registers.
TASK_MODULES = (
    "pipeline.tasks.dws",
    "pipeline.tasks.deadlines",
    "pipeline.tasks.housekeeping",
    "pipeline.tasks.observe",
    "pipeline.tasks.rabbits",
    "pipeline.tasks.hwcoll",
    "pipeline.tasks.sweeps",
    "pipeline.tasks.nodes",
    "pipeline.tasks.timeouts",
    "pipeline.tasks.answers",
)


def create_app(
    settings: Settings | None = None, *, set_current: bool = True, tasks: bool = True
) -> Celery:
    """Return a configured Celery app with every pipeline task registered.

    ``set_current=False`` makes an app that leaves the process's current app alone
    (command-line tools inside a larger process, tests). ``tasks=False`` makes a
    sender that registers no task: it sends what the hooks and the watcher send
    (:data:`~pipeline.platform.routing.SENT_BY_NAME`) by name, and loads none of the
    task modules nor the clients they use (a ``hook`` run from a perilog starts fast).
    """
    settings = settings or load_settings()
    include = TASK_MODULES if tasks else ()
    celery = Celery("coral2_pipeline", set_as_current=set_current, include=include)
    if set_current:
        celery.set_default()  # worker threads resolve shared tasks through the default app
    celery.conf.update(celery_config(settings))
    secure(celery, settings.pipeline)
    nodework.configure(settings.pipeline)
    queues = settings.pipeline.queues
    celery.conf.beat_schedule = {
        **SCHEDULE,
        **heartbeats([queues.lifecycle, queues.timeouts, queues.housekeeping]),
    }
    celery.loader.import_default_modules()  # TASK_MODULES: their shared tasks bind to it
    # bind the shared tasks now: send_task() routes by the task found in the app's registry
    # without finalizing it, so an unfinalized app would send every task to the default queue
    celery.finalize(auto=True)
    # beat's ticks (every few seconds, whatever the jobs do) send no task events: Flower
    # shows the jobs' tasks, not a list scrolled by the sweeps
    for name in ticks(celery.conf.beat_schedule):
        if name in celery.tasks:
            celery.tasks[name].send_events = False
    return celery


#: A periodic task run at least this often is a tick (s).
TICK_S = 5.0


def ticks(schedule: dict[str, dict[str, Any]]) -> set[str]:
    """The tasks beat sends every :data:`TICK_S` seconds or more often."""
    out = set()
    for entry in schedule.values():
        every = entry.get("schedule")
        if isinstance(every, int | float) and every <= TICK_S:
            out.add(str(entry["task"]))
    return out


def sender(celery: Celery) -> Callable[[str, dict[str, Any]], None]:
    """Return how the hooks and the watcher enqueue a task by name: fire and forget.

    It goes through :func:`pipeline.platform.sending.dispatch`: the message is
    noted in the ledger (so one the broker loses is sent again), then sent
    through the registered task's ``apply_async``, so the task's own options
    apply — its queue, and ``keep_result``: ``send_task`` would subscribe
    this process to a result channel for every message it sends and nobody
    would ever read it.
    """

    def send(name: str, kwargs: dict[str, Any]) -> None:
        dispatch(celery, store_of(celery), name, kwargs)

    return send
