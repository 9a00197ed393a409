"""The simulated job manager's ``perilog.so`` prolog: ``coral2-pipeline flux-prolog``.

A site runs ``coral2-pipeline flux-prolog`` as the job-manager prolog; the
job starts when it exits 0. :class:`StoreHold` answers the same question
from the same verdict (``pipeline.store.releases``) without a process per
job: the job manager asks it on its reactor steps, at most every
``poll_s`` per job. Like the command, after a failure verdict it waits while
the pipeline's exception is still in the outbox, then ``grace_s`` more, for
that exception to cancel the prolog first.
"""

from __future__ import annotations

import time

from pipeline.store import Store


class StoreHold:
    """Whether each held job's prolog has ended, and with what status."""

    def __init__(self, store: Store, *, poll_s: float = 0.02, grace_s: float = 1.0) -> None:
        self.store = store
        self.poll_s = poll_s
        self.grace_s = grace_s
        self._next: dict[int, float] = {}
        self._failed_at: dict[int, float] = {}

    def status(self, jobid: int) -> int | None:
        """The prolog's exit status, or None while it runs."""
        now = time.monotonic()
        if now < self._next.get(jobid, 0.0):
            return None
        self._next[jobid] = now + self.poll_s
        verdict = self.store.releases.get(jobid)
        if verdict is None:
            return None
        if verdict.status != 0:
            if self.store.exceptions_on_their_way(jobid):
                return None
            since = self._failed_at.setdefault(jobid, now)
            if now - since < self.grace_s:
                return None
        self.forget(jobid)
        return verdict.status

    def forget(self, jobid: int) -> None:
        """The job's prolog ended (or was killed)."""
        self._next.pop(jobid, None)
        self._failed_at.pop(jobid, None)
