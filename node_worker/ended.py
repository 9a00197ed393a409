"""The jobs whose epilog a node has run, so that a late copy of their prolog undoes nothing.

A node prolog or a ``node.clientmount stop`` that arrives after the job's
epilog — a message redelivered after a worker was killed, a resend by the
ledger — would create the job's CXI services again or stop the clientmount
service that the epilog started for the unmounts. The node worker notes
each epilog it runs, per node, in a file under its state directory (and in
memory), before it acts; a prolog or a clientmount stop for a noted job is
answered as done without touching anything. Once the epilog has destroyed
every CXI service of the job, it notes that too (``<jobid>.clean``): a later
copy of the epilog destroys nothing, since by then the job's VNIs may belong
to another job of the same user, whose services look the same. Notes older
than :data:`KEEP_S` are pruned at start.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from pipeline.errors import ConfigError

log = logging.getLogger("coral2_pipeline.node_worker")

#: How long a note is kept: far past any redelivery (the broker's visibility timeout, the
#: ledger's hour-apart resends).
KEEP_S = 7 * 24 * 3600.0


class EndedJobs:
    """Jobs whose epilog ran on each node, in ``directory/<host>/<jobid>`` (None: memory
    only, for tests)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._known: set[tuple[str, int]] = set()
        if directory is not None:
            try:
                directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                probe = directory / ".writable"
                probe.touch()
                probe.unlink()
            except OSError as exc:
                raise ConfigError(
                    f"--state-dir {str(directory)!r} cannot be written: {exc.strerror}"
                ) from exc
            self._prune(time.time() - KEEP_S)

    def _prune(self, before: float) -> None:
        assert self.directory is not None
        for note in self.directory.glob("*/*"):
            try:
                if note.stat().st_mtime < before:
                    note.unlink()
            except OSError:  # another worker pruned it first
                continue

    def note(self, host: str, jobid: int) -> None:
        """The epilog of ``jobid`` on ``host`` is starting."""
        with self._lock:
            self._known.add((host, jobid))
        if self.directory is not None:
            folder = self.directory / host
            folder.mkdir(exist_ok=True, mode=0o700)
            fd = os.open(folder / str(jobid), os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)

    def note_clean(self, host: str, jobid: int) -> None:
        """The epilog of ``jobid`` on ``host`` destroyed every CXI service of the job: a
        later copy of it must destroy nothing (the job's VNIs may since have gone to
        another job of the same user, whose services look the same)."""
        with self._lock:
            self._known.add((host, -jobid - 1))
        if self.directory is not None:
            folder = self.directory / host
            folder.mkdir(exist_ok=True, mode=0o700)
            fd = os.open(folder / f"{jobid}.clean", os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)

    def clean(self, host: str, jobid: int) -> bool:
        """Whether an epilog of ``jobid`` already destroyed every CXI service of it on
        ``host``."""
        with self._lock:
            if (host, -jobid - 1) in self._known:
                return True
        if self.directory is None:
            return False
        return (self.directory / host / f"{jobid}.clean").exists()

    def ended(self, host: str, jobid: int) -> bool:
        """Whether ``jobid``'s epilog has run (or started) on ``host``."""
        with self._lock:
            if (host, jobid) in self._known:
                return True
        if self.directory is None:
            return False
        found = (self.directory / host / str(jobid)).exists()
        if found:
            with self._lock:
                self._known.add((host, jobid))
        return found
