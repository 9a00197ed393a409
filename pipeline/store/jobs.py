"""Job records: pydantic JSON under ``<prefix>:job:<jobid>``, updated optimistically.

:meth:`JobStore.update` reads the record under ``WATCH``, applies a pure
function and writes it in ``MULTI``; a concurrent writer makes ``EXEC``
fail and the function is applied again to the new value, so no update is
ever lost. Each write bumps ``version``.

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


Updater = Callable[[JobRecord], JobRecord | None]


class JobStore:
    """Job records in Redis."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

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
            with self.client.pipeline() as pipe:
                for _ in range(MAX_ATTEMPTS):
                    try:
                        pipe.watch(key)  # type: ignore[no-untyped-call]
                        raw: Any = pipe.get(key)
                        if raw is None and default is None:
                            pipe.unwatch()
                            return None
                        current = default if raw is None else JobRecord.model_validate_json(raw)
                        assert current is not None
                        new = change(current.model_copy(deep=True))
                        if raw is not None and (new is None or new == current):
                            pipe.unwatch()
                            return current
                        if new is None:
                            new = current
                        elif new != current:
                            new = new.model_copy(update={"version": current.version + 1})
                        pipe.multi()
                        pipe.set(key, new.model_dump_json(), keepttl=True)
                        if raw is None:
                            pipe.sadd(self.keys.jobs_index, jobid)
                        pipe.execute()
                        return new
                    except redis.WatchError:
                        continue
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
