"""How many times a node task's run began and never ended: the node side's poison guard.

A node task whose run kills the node worker every time (a crash in a driver, the
kernel's OOM killer) would be redelivered, and resent by the ledger, forever. The
worker notes each run under its state directory before it starts and crosses it out
when it ends, however it ends; a run that finds :data:`MAX_UNENDED` notes before it
has killed the worker that many times, and is answered with an error instead of run
again. A run that fails with an error ends, and so is never counted: only the runs
a dead worker left unfinished are.
"""

from __future__ import annotations

import threading
from pathlib import Path

#: Runs of one message that may die with the worker before it is answered as failed.
MAX_UNENDED = 3


class Attempts:
    """Unended runs per task id, in ``directory/.runs/<task id>`` (None: memory only)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = None if directory is None else directory / ".runs"
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def _path(self, task_id: str) -> Path | None:
        safe = "".join(c for c in task_id if c.isalnum() or c == "-")[:64]
        return None if self.directory is None or not safe else self.directory / safe

    def begin(self, task_id: str) -> int:
        """Note a run of ``task_id``; return how many began before and never ended."""
        path = self._path(task_id)
        with self._lock:
            if path is not None:
                try:
                    before = int(path.read_text() or 0)
                except (OSError, ValueError):
                    before = 0
                path.write_text(str(before + 1))
            else:
                before = self._counts.get(task_id, 0)
                self._counts[task_id] = before + 1
        return before

    def end(self, task_id: str) -> None:
        """The run of ``task_id`` ended (answered, or failed with an error)."""
        path = self._path(task_id)
        with self._lock:
            self._counts.pop(task_id, None)
            if path is not None:
                path.unlink(missing_ok=True)
