"""The simulated system's processes: each pipeline process a subprocess of its own, as in
production (none shares an interpreter lock with another), named, logging to
``<workdir>/<name>.log``, killed and started again by name, stopped together."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from coral2_sim import procstat
from coral2_sim.children import die_with_parent


@dataclass
class Processes:
    """The started processes, by name, in start order."""

    workdir: Path
    #: the environment of the process of that name, as it is when it (re)starts
    env_of: Callable[[str], dict[str, str]]
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _argv: dict[str, list[str]] = field(default_factory=dict)

    def spawn(self, name: str, argv: list[str]) -> None:
        """Start ``argv`` as the process ``name``."""
        if name in self.running:
            raise ValueError(f"a process named {name!r} was started already")
        self._argv[name] = argv
        self.running[name] = self._popen(name, argv)

    def _popen(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{name}.log").open("ab") as log:  # the child keeps its own fd
            return subprocess.Popen(
                die_with_parent(argv),
                env=self.env_of(name),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )

    def get(self, name: str) -> subprocess.Popen[bytes]:
        """The process ``name`` (KeyError: none was started)."""
        return self.running[name]

    def kill(self, name: str) -> None:
        """SIGKILL the process ``name`` (a crash: no cleanup, nothing acknowledged)."""
        proc = self.running[name]
        proc.kill()
        proc.wait()

    def restart(self, name: str) -> None:
        """Start the process ``name`` again (after :meth:`kill`)."""
        self.running[name] = self._popen(name, self._argv[name])

    def dead(self) -> list[str]:
        """Names of the processes that exited."""
        return [name for name, proc in self.running.items() if proc.poll() is not None]

    def pids(self) -> dict[str, int]:
        """Each process's pid, by name."""
        return {name: proc.pid for name, proc in self.running.items()}

    def footprint(self, name: str) -> tuple[int, float]:
        """(threads, resident MiB) of the process ``name`` (:mod:`procstat`)."""
        return procstat.footprint(self.running[name].pid)

    def stop(self, last: tuple[str, ...] = ()) -> None:
        """Terminate every process at once, newest first (each shuts down on its own), then
        those named in ``last``; kill any still running 15 s later."""
        procs = list(reversed(self.running.items()))
        groups = ([p for n, p in procs if n not in last], [p for n, p in procs if n in last])
        for group in groups:
            for proc in group:
                if proc.poll() is None:
                    proc.terminate()
            deadline = time.monotonic() + 15
            for proc in group:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
