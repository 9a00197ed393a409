"""The ``nnf-clientmount`` service of a node: started so mounts can happen, stopped after.

``systemd`` controls the real unit with ``systemctl``; ``simulated`` keeps a
running flag per node that the simulated clientmount agent
(:mod:`node_worker.agent`) obeys.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from typing import Protocol

from pipeline.errors import TemporaryError

UNIT = "nnf-clientmount"


class ClientmountService(Protocol):
    """Start and stop the clientmount service of ``host``."""

    def start(self, host: str) -> None: ...

    def stop(self, host: str) -> None: ...


class SystemdService:
    """The real unit, through ``systemctl`` (the node worker runs on ``host`` itself)."""

    def __init__(self, unit: str = UNIT, systemctl: str = "systemctl") -> None:
        self.unit = unit
        self.systemctl = systemctl

    def _run(self, verb: str) -> None:
        try:
            done = subprocess.run(
                [self.systemctl, verb, self.unit],
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TemporaryError(f"systemctl {verb} {self.unit}: {exc}") from exc
        if done.returncode != 0:
            raise TemporaryError(
                f"systemctl {verb} {self.unit} failed ({done.returncode}): {done.stderr.strip()}"
            )

    def start(self, host: str) -> None:
        self._run("start")

    def stop(self, host: str) -> None:
        self._run("stop")


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
