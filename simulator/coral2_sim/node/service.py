"""The simulated ``nnf-clientmount`` service: a running flag per node.

The simulated clientmount agent (:mod:`coral2_sim.node.agent`) obeys it;
it has the shape of ``node_worker.service.ClientmountService``. With a
``state_file`` the flags outlive the node worker, as a systemd unit's state
outlives the process that started it: a restarted node worker finds the
services as it left them, and the simulation neither hides nor invents a
fault there.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path


class SimulatedService:
    """A running flag per node; ``on_start`` tells the agent to look at the node again."""

    def __init__(
        self, on_start: Callable[[str], None] | None = None, state_file: Path | None = None
    ) -> None:
        self._lock = threading.Lock()
        self.on_start = on_start
        self.state_file = state_file
        self._running: set[str] = set(self._load())
        self._seen = self._stamp()

    def _stamp(self) -> float:
        try:
            return self.state_file.stat().st_mtime_ns if self.state_file else 0.0
        except OSError:
            return 0.0

    def refresh(self) -> list[str]:
        """Read the flags again if another process (the node worker, when the simulated
        clientmount daemon runs on its own) changed them; return the nodes that started."""
        stamp = self._stamp()
        if stamp == self._seen:
            return []
        with self._lock:
            self._seen = stamp
            before, self._running = self._running, set(self._load())
            return sorted(self._running - before)

    def _load(self) -> list[str]:
        if self.state_file is None or not self.state_file.exists():
            return []
        try:
            hosts = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return []
        return [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []

    def _save(self) -> None:
        """Write the flags (under the lock), atomically: a kill leaves the old or the new."""
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.state_file.with_suffix(".tmp")
        scratch.write_text(json.dumps(sorted(self._running)))
        os.replace(scratch, self.state_file)

    def running_hosts(self) -> list[str]:
        """Every node whose service runs."""
        with self._lock:
            return sorted(self._running)

    def running(self, host: str) -> bool:
        with self._lock:
            return host in self._running

    def start(self, host: str) -> None:
        with self._lock:
            self._running.add(host)
            self._save()
        if self.on_start is not None:
            self.on_start(host)

    def stop(self, host: str) -> None:
        with self._lock:
            self._running.discard(host)
            self._save()
