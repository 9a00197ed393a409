"""Job records: pydantic JSON under ``<prefix>:job:<jobid>``, updated optimistically.

:meth:`JobStore.update` reads the record, applies a pure function and
writes the result with a compare-and-set script that stores it only if
the record is still the one read; a concurrent writer makes it refuse,
and the function is applied again to the new value, so no update is ever
lost. Two round trips per change (``WATCH``/``MULTI`` would take three),
one when nothing changes. Each write bumps ``version``.

The index ``<prefix>:jobs`` holds the *tracked* jobs, those whose Workflow
has not been seen gone; :meth:`JobStore.finish` takes a job out of it and
gives its record and its one-shot marks a retention period, after which
Redis forgets them — the store holds what is in flight plus a window of
history, not every job the machine ever ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from pipeline.errors import StoreConflict
from pipeline.model.job import JobRecord
from pipeline.store.connection import store_errors
from pipeline.store.keys import Keys

MAX_ATTEMPTS = 50

#: KEYS: record, index. ARGV: the record as read ("" = absent), the new record, jobid.
#: Stores the new record (keeping its expiry) only if the stored one is still as read;
#: a record created here joins the index. Returns 1 if it stored, 0 if the record moved.
_COMPARE_AND_SET = """
local current = redis.call('get', KEYS[1])
if (current or '') ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'KEEPTTL')
if not current then redis.call('sadd', KEYS[2], ARGV[3]) end
return 1
"""


Updater = Callable[[JobRecord], JobRecord | None]


class JobStore:
    """Job records in Redis."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._compare_and_set = client.register_script(_COMPARE_AND_SET)

    def get(self, jobid: int) -> JobRecord | None:
        """Return the record of ``jobid``, or None."""
        try:
            raw: Any = self.client.get(self.keys.job(jobid))
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return None if raw is None else JobRecord.model_validate_json(raw)

    def create(self, record: JobRecord) -> bool:
        """Store ``record`` unless one exists; return whether it was created."""
        try:
            pipe = self.client.pipeline()
            pipe.set(self.keys.job(record.jobid), record.model_dump_json(), nx=True)
            pipe.sadd(self.keys.jobs_index, record.jobid)
            created, _ = pipe.execute()
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return bool(created)

    def update(
        self, jobid: int, change: Updater, *, default: JobRecord | None = None
    ) -> JobRecord | None:
        """Apply ``change`` to the record atomically; return the stored result.

        ``change`` gets a copy and returns the new record, or None to leave
        it as is. It may run more than once, so it must be pure. With no
        record, returns None — or, given ``default``, applies ``change`` to
        it and stores the result (create-or-update in one transaction).
        """
        key = self.keys.job(jobid)
        try:
            for _ in range(MAX_ATTEMPTS):
                raw: Any = self.client.get(key)
                if raw is None and default is None:
                    return None
                current = default if raw is None else JobRecord.model_validate_json(raw)
                assert current is not None
                new = change(current.model_copy(deep=True))
                if raw is not None and (new is None or new == current):
                    return current
                if new is None:
                    new = current
                elif new != current:
                    new = new.model_copy(update={"version": current.version + 1})
                read = b"" if raw is None else raw
                stored = self._compare_and_set(
                    keys=[key, self.keys.jobs_index], args=[read, new.model_dump_json(), jobid]
                )
                if stored:
                    return new
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        raise StoreConflict(f"job {jobid}: record kept changing during {MAX_ATTEMPTS} attempts")

    def delete(self, jobid: int) -> None:
        """Forget ``jobid`` (missing is fine)."""
        try:
            pipe = self.client.pipeline()
            pipe.delete(self.keys.job(jobid), self.keys.marks(jobid))
            pipe.srem(self.keys.jobs_index, jobid)
            pipe.execute()
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def finish(self, jobid: int, retain_s: float) -> None:
        """Stop tracking ``jobid``: its record and marks expire ``retain_s`` from now.

        Idempotent; a later update keeps the expiry (``SET KEEPTTL``).
        """
        ms = max(1, int(retain_s * 1000))
        try:
            pipe = self.client.pipeline()
            pipe.srem(self.keys.jobs_index, jobid)
            pipe.pexpire(self.keys.job(jobid), ms)
            pipe.pexpire(self.keys.marks(jobid), ms)
            pipe.hdel(self.keys.workflow_seen, jobid)
            pipe.execute()
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def records(self) -> list[JobRecord]:
        """Return the record of every tracked job, by jobid (one round trip for the lot)."""
        ids = self.jobids()
        try:
            raws: Any = self.client.mget([self.keys.job(j) for j in ids]) if ids else []
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return [JobRecord.model_validate_json(raw) for raw in raws if raw is not None]

    def jobids(self) -> list[int]:
        """Return the ids of the tracked jobs, ascending."""
        try:
            members: Any = self.client.smembers(self.keys.jobs_index)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return sorted(int(m) for m in members)
