"""Each Celery worker of the pipeline beats its heartbeat (``pipeline.store.workers``) from
a thread of its own, started when the worker is ready and stopped with it; a clean stop
says the worker is gone, so that only a worker killed outright has its messages sent
again at once."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from pipeline.errors import StoreUnavailable
from pipeline.platform.sending import store_of
from pipeline.store.workers import BEAT_S

log = logging.getLogger("coral2_pipeline.workers")

_running: dict[int, tuple[threading.Thread, threading.Event, Any, str]] = {}


def _beat(store: Any, worker: str, queues: list[str], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            store.workers.beat(worker, queues, time.time())
        except StoreUnavailable as exc:  # the next beat tries again
            log.debug("worker heartbeat: %s", exc)
        stop.wait(BEAT_S)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _start(sender: Any = None, **_: Any) -> None:
    """A pipeline worker is ready: beat for it, with the queues it consumes."""
    app = getattr(sender, "app", None)
    if app is None or "coral2_settings" not in app.conf:
        return
    queues = sorted(app.amqp.queues.consume_from or app.amqp.queues)
    store, worker, stop = store_of(app), str(sender.hostname), threading.Event()
    thread = threading.Thread(
        target=_beat, args=(store, worker, queues, stop), name="worker-beat", daemon=True
    )
    _running[id(app)] = (thread, stop, store, worker)
    thread.start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop(sender: Any = None, **_: Any) -> None:
    """The worker stops cleanly: it puts back what it holds, so it is gone, not dead."""
    for thread, stop, store, worker in list(_running.values()):
        stop.set()
        thread.join(timeout=5)
        with contextlib.suppress(StoreUnavailable):
            store.workers.gone(worker)
    _running.clear()
