"""The ``nnf-clientmount`` service of a node: started so mounts can happen, stopped after.

:class:`SystemdService` controls the real unit with ``systemctl``; the
simulated system brings its own (``coral2_sim.node.service``).
"""

from __future__ import annotations

import subprocess
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
