"""systemd supervision of the Celery processes (the management worker, beat and the
node worker): ``READY=1`` once the worker consumes or beat starts, ``WATCHDOG=1`` from
the worker's own event loop (a loop that no longer turns stops the pings, and systemd
restarts the worker), ``STOPPING=1`` on the way out. Beat pings from its scheduler's
tick (:mod:`pipeline.platform.beat`). Nothing happens outside systemd.

Once up, each of them (and each child of a prefork pool) settles its heap
(:func:`pipeline.platform.heap.settle`); a worker names, once, the keys of its
configuration it ignores."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery.signals import beat_init, worker_process_init, worker_ready, worker_shutting_down

from pipeline.platform import heap, quiet
from pipeline.platform.systemd import notify, watchdog_interval
from pipeline.settings import Settings

log = logging.getLogger("coral2_pipeline.platform")

quiet.install()  # the periodic tasks' received/succeeded lines: dropped


@worker_ready.connect  # type: ignore[untyped-decorator]
def _worker_ready(sender: Any = None, **_: Any) -> None:
    heap.settle()
    settings = getattr(getattr(sender, "app", None), "conf", {}).get("coral2_settings")
    if settings is not None:
        name_ignored(settings)
    notify("READY=1", "STATUS=consuming")
    interval = watchdog_interval()
    timer = getattr(sender, "timer", None)
    if interval is not None and timer is not None:
        timer.call_repeatedly(interval, notify, ("WATCHDOG=1",))


def name_ignored(settings: Settings) -> None:
    """Log each key of ``settings`` that this release ignores (a worker, as it starts)."""
    for key in settings.pipeline.ignored():
        log.warning("pipeline.%s is set but ignored by this release: remove it", key)


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _pool_child_ready(**_: Any) -> None:
    heap.settle()  # a prefork child: what it inherited and what it set up


#: How long a worker with no task running may take to leave once told to stop (s): its
#: warm shutdown closes its broker connection, which against a Redis that accepts and never
#: answers would wait for ever (systemd's TimeoutStopSec= is for the tasks it lets finish).
STOP_GRACE_S = 10.0


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _worker_stopping(**_: Any) -> None:
    notify("STOPPING=1")
    if not any(t.name == LEAVER for t in threading.enumerate()):
        threading.Thread(
            target=_leave_when_idle, args=(STOP_GRACE_S,), name=LEAVER, daemon=True
        ).start()


LEAVER = "coral2-leave-when-idle"


def _leave_when_idle(grace_s: float) -> None:
    """Exit once no task has run for ``grace_s`` since the stop began: the tasks in flight
    finish (each is bounded by its own timeouts), a shutdown stuck on a silent broker does
    not hold the process. Every task is idempotent and its message stays on the ledger, so
    leaving is safe."""
    from celery.worker import state

    idle_since: float | None = None
    while True:
        time.sleep(0.25)
        if state.active_requests:
            idle_since = None
            continue
        now = time.monotonic()
        idle_since = now if idle_since is None else idle_since
        if now - idle_since >= grace_s:
            log.warning(
                "stopping: no task running and the shutdown still not done %g s after the "
                "stop signal (a broker that does not answer?): leaving now",
                grace_s,
            )
            logging.shutdown()
            os._exit(0)


@beat_init.connect  # type: ignore[untyped-decorator]
def _beat_ready(**_: Any) -> None:
    heap.settle()
    notify("READY=1", "STATUS=scheduling")
