"""The simulated ``nnf-clientmount`` service: a running flag per node.

The simulated clientmount agent (:mod:`pipeline.sim.node.agent`) obeys it;
it has the shape of ``node_worker.service.ClientmountService``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class SimulatedService:
    """A running flag per node; ``on_start`` tells the agent to look at the node again."""

    def __init__(self, on_start: Callable[[str], None] | None = None) -> None:
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self.on_start = on_start

    def running(self, host: str) -> bool:
        with self._lock:
            return host in self._running

    def start(self, host: str) -> None:
        with self._lock:
            self._running.add(host)
        if self.on_start is not None:
            self.on_start(host)

    def stop(self, host: str) -> None:
        with self._lock:
            self._running.discard(host)
