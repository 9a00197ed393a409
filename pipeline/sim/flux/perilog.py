"""The job manager's node perilog for the simulated Flux: node tasks on ``node.<host>``.

Flux runs the clientmount prolog/epilog scripts on every node of a job and
waits for all of them; here :class:`CeleryPerilog` sends ``node.prolog`` /
``node.epilog`` to each node's queue (served by ``coral2-pipeline
node-worker``) and reports done when every result is in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.result import AsyncResult


@dataclass
class _Pending:
    results: list[AsyncResult]
    next_check: float = field(default_factory=time.monotonic)


class CeleryPerilog:
    """Send node perilog tasks and poll their results (at most every ``poll_s``)."""

    def __init__(self, app: Celery, node_prefix: str = "node.", poll_s: float = 0.05) -> None:
        self.app = app
        self.node_prefix = node_prefix
        self.poll_s = poll_s
        self._running: set[AsyncResult] = set()
        self._lock = threading.Lock()

    def start(self, kind: str, jobid: int, hosts: list[str], dw: bool) -> object:
        results = []
        for host in hosts:
            kwargs: dict[str, Any] = {"hostname": host, "jobid": jobid}
            if kind == "prolog":
                kwargs["dw"] = dw
            queue = self.node_prefix + host
            results.append(self.app.send_task(f"node.{kind}", kwargs=kwargs, queue=queue))
        with self._lock:
            self._running.update(results)
        return _Pending(results)

    def poll(self, handle: object) -> bool:
        assert isinstance(handle, _Pending)
        now = time.monotonic()
        if now < handle.next_check:
            return False
        handle.next_check = now + self.poll_s
        still = []
        for result in handle.results:
            if result.ready():
                self._forget(result)
            else:
                still.append(result)
        handle.results = still
        return not still

    def close(self) -> None:
        """Forget every result still awaited, while Redis is up: the result backend
        subscribed to each, and would otherwise unsubscribe whenever the garbage
        collector gets to it — perhaps after Redis is gone, raising in ``__del__``."""
        with self._lock:
            running = list(self._running)
        for result in running:
            self._forget(result)

    def _forget(self, result: AsyncResult) -> None:
        result.forget()
        with self._lock:
            self._running.discard(result)
