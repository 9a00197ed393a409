"""What the base task keeps per message run: its start count, lock, ledger entry, failures.

A run begins and ends in one round trip each (:meth:`TaskRuns.begin`,
:meth:`TaskRuns.settle`): the start counter (the poison-message guard), the
job's lock and its record, the key the task clears, then the lock's release
and the ledger entry's outcome.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import redis

from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys
from pipeline.store.ledger import Ledger
from pipeline.store.marks import Holding, JobLocks

if TYPE_CHECKING:
    from pipeline.store.jobs import JobStore

log = logging.getLogger("coral2_pipeline.store.runs")

#: How long a message's start counter lives (s): longer than any message is redelivered.
ATTEMPTS_TTL_S = 7 * 24 * 3600


#: The failure, and the task's total counted once per message.
_RECORD_FAILURE = """
if redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
"""


@translated
class TaskRuns:
    """The run bookkeeping of task messages."""

    def __init__(
        self, client: redis.Redis, keys: Keys, jobs: JobStore, locks: JobLocks, ledger: Ledger
    ) -> None:
        self.client = client
        self.keys = keys
        self.jobs = jobs
        self.locks = locks
        self.ledger = ledger

    def begin(
        self,
        task_id: str,
        *,
        lock_jobid: int | None,
        lock_ttl_s: float,
        clears: str | None,
        may_have_failed: bool = True,
    ) -> tuple[int, str | None]:
        """Start a run of message ``task_id``: read how many of its runs failed (only if it
        ``may_have_failed``: a message sent for the first time has not), delete key
        ``clears``, and for ``lock_jobid`` try its lock and read its record (the task's
        first update of it then needs no read of its own: ``JobStore.start_known``).
        Return this run's attempt (failed runs + 1) and the lock's token (None: not taken).

        Only failures count (:meth:`failed`): a message redelivered because its worker
        was killed, or retried because its job's lock was busy, is never taken for poison."""
        pipe = self.client.pipeline(transaction=False)
        if may_have_failed:
            pipe.get(self.keys.attempts(task_id))
        token = None
        if lock_jobid is not None:
            token = self.locks.acquire_in(pipe, lock_jobid, ttl_s=lock_ttl_s)
            pipe.get(self.keys.job(lock_jobid))  # after the lock: what no one else may change
        if clears is not None:
            pipe.delete(clears)
        replies = pipe.execute()
        failures = replies.pop(0) if may_have_failed else 0
        taken = token if token and replies[0] else None
        self.jobs.start_known(lock_jobid, replies[1] if taken else None)
        return int(failures or 0) + 1, taken

    def failed(self, task_id: str) -> None:
        """Count a failed run of message ``task_id`` (a bug's exception, a permanent error)."""
        key = self.keys.attempts(task_id)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, ATTEMPTS_TTL_S)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("cannot count a failed run of %s: %s", task_id, store_errors(exc))

    def settle(
        self,
        name: str,
        task_id: str | None,
        holding: Holding | None,
        *,
        until: float | None,
        now: float | None = None,
        after: Sequence[Callable[[Any], None]] = (),
    ) -> None:
        """Close a run in one round trip: release ``holding`` and cross the message out of
        the ledger (it has an outcome) — or, with ``until``, postpone its resend (it
        retries; ``now``: the clock ``until`` was read from, checked for a step in the same
        step). ``after``: the writes that mark the run's work done, each given the pipeline,
        before the lock's release. A store outage only costs a duplicate later, and a lock
        that expires by itself."""
        try:
            pipe = self.client.pipeline(transaction=False)
            for write in after:
                write(pipe)
            if holding is not None and not holding.released:
                self.locks.release_in(pipe, holding)
            if task_id is not None:  # None: run eagerly, never sent
                if until is None:
                    self.ledger.done_in(pipe, task_id)
                else:
                    self.ledger.postpone_in(pipe, task_id, until, now)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("%s: cannot update the ledger: %s", name, store_errors(exc))

    def alive(self, queue: str, now: float) -> None:
        """A worker took work from ``queue`` at ``now`` (``housekeeping.heartbeat``)."""
        self.client.hset(self.keys.alive, queue, f"{now:.3f}")

    def record_failure(self, task_id: str, entry: dict[str, Any]) -> None:
        """Record a permanent failure of message ``task_id`` in ``<prefix>:failures``, and
        count it once in the task's total (a message recorded again is not counted again)."""
        keys = [self.keys.failures, self.keys.failures_total]
        self.client.eval(
            _RECORD_FAILURE, 2, *keys, task_id, json.dumps(entry), str(entry.get("task"))
        )
