"""A worker sends no task events until a monitor asks for them; then it does.

Flower asks (its ``enable_events`` option, on by default), as
``celery control enable_events`` does: this is what lets it show tasks
while workers spare the publishes nobody listens to. Events leave one
worker connection in order, so any event of the first task would arrive
before the second task's "task-succeeded".
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery

pytestmark = pytest.mark.usefixtures("worker")


class Listener:
    """An event receiver on its own thread, recording every event it gets."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.receiver: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.app.connection_for_read() as connection:
            self.receiver = self.app.events.Receiver(connection, handlers={"*": self._record})
            self.receiver.capture(limit=None, timeout=None, wakeup=False)

    def _record(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(event)

    def seen(self, **fields: Any) -> bool:
        with self.lock:
            return any(all(e.get(k) == v for k, v in fields.items()) for e in self.events)

    def wait_for(self, timeout_s: float, **fields: Any) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.seen(**fields):
                return True
            time.sleep(0.02)
        return False


@pytest.fixture
def listener(celery_app: Celery) -> Iterator[Listener]:
    listening = Listener(celery_app)
    listening.thread.start()
    # subscribed once an event of our own comes back (a pub/sub subscription is not instant)
    marker = uuid.uuid4().hex
    with celery_app.events.default_dispatcher() as dispatcher:
        deadline = time.monotonic() + 30
        while not listening.seen(type="probe-listening", marker=marker):
            assert time.monotonic() < deadline, "the event receiver never got its own event"
            dispatcher.send("probe-listening", marker=marker)
            time.sleep(0.1)
    yield listening
    if listening.receiver is not None:
        listening.receiver.should_stop = True
    listening.thread.join(timeout=5)


def _run_probe(celery_app: Celery) -> str:
    result = celery_app.send_task("probe.flaky", kwargs={"key": uuid.uuid4().hex, "failures": 0})
    assert result.get(timeout=30) == 1
    return str(result.id)


def test_a_task_sends_no_events_until_a_monitor_enables_them(
    celery_app: Celery, listener: Listener
) -> None:
    quiet = _run_probe(celery_app)
    try:
        replies = celery_app.control.enable_events(reply=True, limit=1, timeout=10)
        assert replies, "no worker answered enable_events"
        heard = _run_probe(celery_app)
        assert listener.wait_for(30, type="task-succeeded", uuid=heard)
        assert listener.seen(type="task-received", uuid=heard)
    finally:
        celery_app.control.disable_events(reply=True, limit=1, timeout=10)
    assert not listener.seen(uuid=quiet)
