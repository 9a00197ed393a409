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


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _worker_stopping(**_: Any) -> None:
    notify("STOPPING=1")


@beat_init.connect  # type: ignore[untyped-decorator]
def _beat_ready(**_: Any) -> None:
    heap.settle()
    notify("READY=1", "STATUS=scheduling")
