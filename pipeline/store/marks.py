"""One-shot marks and per-job locks.

* :meth:`Marks.once` is ``HSETNX`` on the job's hash of marks: true for the
  first caller only, so a message such as ``prolog-remove`` is sent once
  however often a task runs. One hash per job, so a finished job's marks
  expire with its record (:meth:`~pipeline.store.jobs.JobStore.finish`).
* :class:`JobLocks` are short Redis locks with an owner token and expiry;
  release and extend only act when the token still matches (a Lua script),
  so a worker whose lock expired cannot release another's. Taking and
  releasing can ride in a pipeline with other commands
  (:meth:`JobLocks.acquire_in`, :meth:`JobLocks.release_in`), so a task's
  start and end each cost one round trip, lock included.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.errors import StoreUnavailable, TemporaryError
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

_STREAM_ID = re.compile(r"\d+-\d+")

log = logging.getLogger("coral2_pipeline.store.locks")

#: The lock-keeper thread ends once no lock has been held for this long (s).
KEEPER_IDLE_S = 2.0

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_EXTEND = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


#: The fence ``job.cleanup`` puts up first: no ``job.run`` of the job acts after it, and
#: hardware-collective housekeeping leaves its reservation to the release under way.
CLEANUP_FENCE = "cleanup"
#: Up from the first task that takes a job's Workflow towards its end (``dws.post_run``,
#: ``dws.epilog_lost``, ``dws.teardown``, ``dws.abort``): a ``dws.create`` that comes
#: later (a copy the ledger sent again while the first waited on a dead worker) creates
#: nothing, even before the job has ended.
TEARDOWN_FENCE = "teardown"


class LockBusy(TemporaryError):
    """Raised when a job's lock is held by someone else past the wait."""


@dataclass
class Holding:
    """A lock held by :meth:`JobLocks.held`: its job, owner token, and whether it was
    released already (by :meth:`JobLocks.release_in`, in a pipeline with other commands)."""

    jobid: int
    token: str
    released: bool = False


@translated
class Marks:
    """One-shot marks per job."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    def once(self, jobid: int, name: str) -> bool:
        """Set the mark; return True only for the call that set it."""
        return bool(self.client.hsetnx(self.keys.marks(jobid), name, "1"))

    def fence(self, jobid: int, name: str, ttl_s: float) -> None:
        """Put up fence ``name`` of ``jobid`` (``<prefix>:fence:<jobid>:<name>``) for
        ``ttl_s``: a key of its own, so the job's one-shot marks keep their lifetime."""
        self.client.set(self._fence(jobid, name), "1", px=max(1, int(ttl_s * 1000)))

    def fenced(self, jobid: int, name: str) -> bool:
        """Whether fence ``name`` of ``jobid`` is up."""
        return bool(self.client.exists(self._fence(jobid, name)))

    def _fence(self, jobid: int, name: str) -> str:
        return f"{self.keys.prefix}:fence:{jobid}:{name}"

    def is_set(self, jobid: int, name: str) -> bool:
        """Return whether the mark exists."""
        return bool(self.client.hexists(self.keys.marks(jobid), name))

    def sent(self, jobid: int, prefix: str) -> dict[str, str]:
        """The job's marks named ``prefix…`` set by a once-only outbox append, each with
        its entry's id (marks set otherwise hold no id and are left out)."""
        marks: Any = self.client.hgetall(self.keys.marks(jobid))
        out: dict[str, str] = {}
        for raw_name, raw_value in marks.items():
            name, value = raw_name.decode(), raw_value.decode()
            if name.startswith(prefix) and _STREAM_ID.fullmatch(value):
                out[name] = value
        return out

    def clear(self, jobid: int, name: str) -> None:
        """Remove the mark (used when a job's record is deleted)."""
        self.client.hdel(self.keys.marks(jobid), name)


@translated
class JobLocks:
    """Per-job locks with owner tokens."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._release = client.register_script(_RELEASE)
        self._extend = client.register_script(_EXTEND)
        self._held: dict[str, tuple[int, float, float]] = {}  # token → (jobid, ttl, renew at)
        self._held_lock = threading.Condition()
        self._keeper: threading.Thread | None = None
        self._keeper_wakes_at = 0.0  # when the waiting keeper wakes next (monotonic s)

    def acquire(self, jobid: int, *, ttl_s: float = 30.0) -> str | None:
        """Take the lock without waiting; return the owner token, or None if held."""
        token = secrets.token_hex(8)
        ok = self.client.set(self.keys.lock(jobid), token, nx=True, px=int(ttl_s * 1000))
        return token if ok else None

    def acquire_in(self, pipe: redis.client.Pipeline, jobid: int, *, ttl_s: float) -> str:
        """Queue taking the lock in ``pipe``; return the token it proposes. The lock is
        taken if that command's reply is true."""
        token = secrets.token_hex(8)
        pipe.set(self.keys.lock(jobid), token, nx=True, px=int(ttl_s * 1000))
        return token

    def release_in(self, pipe: redis.client.Pipeline, holding: Holding) -> None:
        """Stop renewing ``holding`` and queue its release in ``pipe`` (token-checked)."""
        self._forget(holding.token)
        pipe.eval(_RELEASE, 1, self.keys.lock(holding.jobid), holding.token)
        holding.released = True

    def release(self, jobid: int, token: str) -> bool:
        """Release the lock if ``token`` still owns it."""
        return bool(self._release(keys=[self.keys.lock(jobid)], args=[token]))

    def extend(self, jobid: int, token: str, *, ttl_s: float) -> bool:
        """Push the expiry to ``ttl_s`` from now if ``token`` still owns the lock."""
        return bool(self._extend(keys=[self.keys.lock(jobid)], args=[token, int(ttl_s * 1000)]))

    @contextmanager
    def held(
        self, jobid: int, *, ttl_s: float = 10.0, wait_s: float = 5.0, token: str | None = None
    ) -> Iterator[Holding]:
        """Hold the lock for a block, waiting up to ``wait_s``; raise :class:`LockBusy` after.

        ``token``: the lock is already taken with it (:meth:`acquire_in`); the
        block adopts it. The lock is released when the block ends, unless
        :meth:`release_in` released it already.

        The lock expires ``ttl_s`` after its last renewal; the process's one
        lock-keeper thread renews every held lock every ``ttl_s / 3`` while
        its block runs (one thread, not one per task). A holder killed with
        SIGKILL stops renewing, so its lock is free again within ``ttl_s`` —
        never for a whole task time limit.
        """
        deadline = time.monotonic() + wait_s
        delay = 0.001  # tasks of one job hold it for milliseconds: poll fast, back off a little
        while token is None and (token := self.acquire(jobid, ttl_s=ttl_s)) is None:
            if time.monotonic() >= deadline:
                raise LockBusy(f"job {jobid} is locked by another worker", delay_s=1.0)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        self._keep(token, jobid, ttl_s)
        holding = Holding(jobid, token)
        try:
            yield holding
        finally:
            if not holding.released:
                self._forget(token)
                self.release(jobid, token)

    def _forget(self, token: str) -> None:
        """Stop renewing ``token`` (before releasing it: the keeper must not find it gone)."""
        with self._held_lock:
            self._held.pop(token, None)

    def _keep(self, token: str, jobid: int, ttl_s: float) -> None:
        """Renew the lock ``token`` until it is released, from one thread per process.

        The keeper is woken only when it would sleep past this lock's first
        renewal: a task holds its lock for milliseconds, and a wake-up per task
        would cost the worker one more thread contending for the GIL.
        """
        due = time.monotonic() + ttl_s / 3
        with self._held_lock:
            self._held[token] = (jobid, ttl_s, due)
            # not alive: this process was forked from one whose keeper was running
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(target=self._renew, name="lock-keeper", daemon=True)
                self._keeper.start()
            elif due < self._keeper_wakes_at:
                self._held_lock.notify()

    def _renew(self) -> None:
        """Extend each held lock every third of its life, until it is released.

        Checking and extending under the same mutex as release means a lock
        released meanwhile is never reported lost. The thread ends once no
        lock has been held for ``KEEPER_IDLE_S`` (the next :meth:`held`
        starts another): a process keeps at most one keeper, none while
        idle, and a busy worker does not start one per task.
        """
        with self._held_lock:
            try:
                idle_until: float | None = None
                while True:
                    now = time.monotonic()
                    for token, (jobid, ttl_s, due) in list(self._held.items()):
                        if due > now:
                            continue
                        try:
                            if not self.extend(jobid, token, ttl_s=ttl_s):
                                log.error("lost the lock of job %s while holding it", jobid)
                                del self._held[token]
                                continue
                        except StoreUnavailable as exc:
                            log.warning("cannot renew the lock of job %s: %s", jobid, exc)
                        self._held[token] = (jobid, ttl_s, now + ttl_s / 3)
                    if self._held:
                        idle_until = None
                        wake = min(due for _, _, due in self._held.values())
                    else:
                        idle_until = idle_until or now + KEEPER_IDLE_S
                        if now >= idle_until:
                            return
                        wake = idle_until
                    self._keeper_wakes_at = wake
                    self._held_lock.wait(max(0.0, wake - now))
            finally:  # an unexpected error ends it too: the next held() starts another
                self._keeper = None
