"""Job records: pydantic JSON under ``<prefix>:job:<jobid>``, updated optimistically.

:meth:`JobStore.update` reads the record, applies a pure function and
writes the result with a compare-and-set script that stores it only if
the record is still the one read; a concurrent writer makes it refuse,
and the function is applied again to the new value, so no update is ever
lost. Two round trips per change (``WATCH``/``MULTI`` would take three),
one when nothing changes. Each write bumps ``version``.

Within one thread, an update starts from the record as that thread last
read or wrote it (:meth:`JobStore.known`: a task holds the job's lock, so
nobody else should have changed it) and skips the read: one round trip per
change. The compare-and-set keeps this safe — a record someone else
changed meanwhile makes it refuse, and the update reads afresh; and an
update that would change nothing reads once to confirm before it returns.
A task starts each run with what its first round trip read
(:meth:`JobStore.start_known`), so nothing carries over between runs.

The index ``<prefix>:jobs`` holds the *tracked* jobs, those whose Workflow
has not been seen gone; :meth:`JobStore.finish` takes a job out of it and
gives its record and its one-shot marks a retention period, after which
Redis forgets them — the store holds what is in flight plus a window of
history, not every job the machine ever ran.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import redis

from pipeline.errors import StoreConflict
from pipeline.model.job import JobRecord
from pipeline.store.connection import eval_in, translated
from pipeline.store.keys import Keys
from pipeline.store.resync import UNFINISHED_AFTER_S

MAX_ATTEMPTS = 50

#: The most records a thread remembers (one task touches one or two; a hook process, many).
KNOWN_MAX = 64

#: KEYS: record, index, observed, marks, resync-due. ARGV: the record as read ("" = absent),
#: the new record, jobid, the new record's observed entry ("" = the same as the stored
#: record's, which the hash holds already), when ``dws.resync`` looks at a new read ("" =
#: no new read). Stores the new record (keeping its expiry) only if the stored one is
#: still as read; a record created here joins the index, unless the job has ended (a late
#: task never makes a finished job tracked again). A tracked job's entry in the observed
#: hash follows its record (a finished job's stays gone), and a new read of its Workflow
#: is looked at again unless finished with by then (:mod:`.resync`). Returns 1 if it
#: stored, 0 if the record moved.
_COMPARE_AND_SET = """
local current = redis.call('get', KEYS[1])
if (current or '') ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'KEEPTTL')
if not current and redis.call('hexists', KEYS[4], 'ended') == 0 then
  redis.call('sadd', KEYS[2], ARGV[3])
end
if (ARGV[4] ~= '' or not current) and redis.call('sismember', KEYS[2], ARGV[3]) == 1 then
  redis.call('hset', KEYS[3], ARGV[3], ARGV[4])
  if ARGV[5] ~= '' then redis.call('zadd', KEYS[5], 'LT', ARGV[5], ARGV[3]) end
end
return 1
"""

#: KEYS: record, index, observed, marks, resync-due. ARGV: the record, jobid, its observed
#: entry, when ``dws.resync`` looks at its read ("" = it read nothing). Stores the record
#: and its entry unless a record exists; the job joins the index either way (a record whose
#: index entry a crash lost is tracked again) — unless the job has ended: a late copy of a
#: task creates nothing for a finished job and tracks it no more.
_CREATE = """
if redis.call('hexists', KEYS[4], 'ended') == 1 then return 0 end
local created = redis.call('set', KEYS[1], ARGV[1], 'NX')
redis.call('sadd', KEYS[2], ARGV[2])
if not created then return 0 end
redis.call('hset', KEYS[3], ARGV[2], ARGV[3])
if ARGV[4] ~= '' then redis.call('zadd', KEYS[5], 'LT', ARGV[4], ARGV[2]) end
return 1
"""


def observed_entry(record: JobRecord) -> str:
    """A record's entry in the observed hash: ``"<observed_rv> <observed_at>"``."""
    return f"{record.observed_rv} {record.observed_at!r}"


def new_read(record: JobRecord, before: JobRecord) -> bool:
    """Whether ``record`` holds another read of its Workflow than ``before``."""
    return (before.observed_rv, before.observed_at) != (record.observed_rv, record.observed_at)


def look_at(record: JobRecord, before: JobRecord | None) -> str:
    """When ``dws.resync`` looks at ``record``'s read of its Workflow, if that read is new
    since ``before`` (else ""): once the observe that read it should have finished."""
    if record.observed_at <= 0 or (before is not None and not new_read(record, before)):
        return ""
    return repr(record.observed_at + UNFINISHED_AFTER_S)


Updater = Callable[[JobRecord], JobRecord | None]


def parse_notes(raw: Mapping[Any, Any]) -> dict[int, tuple[str, float]]:
    """Read a hash of jobid → ``"<resourceVersion> <epoch s>"`` (``<prefix>:observed``,
    ``<prefix>:workflow-seen``) as jobid → (resourceVersion, epoch s); an entry that cannot
    be read is left out."""
    out: dict[int, tuple[str, float]] = {}
    for key, value in raw.items():
        rv, _, at = (value.decode() if isinstance(value, bytes) else str(value)).partition(" ")
        try:
            out[int(key)] = (rv, float(at))
        except ValueError:
            continue
    return out


#: The one-shot mark of a job the pipeline is done with (:meth:`JobStore.finish`): a task
#: that would start its work again (``dws.create``, ``dws.setup``, ``job.run``) does nothing.
ENDED = "ended"

#: KEYS: index, handled. ARGV: jobid, resourceVersion. Notes that the job's observe of that
#: version finished, for a tracked job only: a run that ended the job leaves nothing behind.
_HANDLED = """
if redis.call('sismember', KEYS[1], ARGV[1]) == 1 then
  redis.call('hset', KEYS[2], ARGV[1], ARGV[2])
end
"""


@translated
class JobStore:
    """Job records in Redis."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._compare_and_set = client.register_script(_COMPARE_AND_SET)
        self._create = client.register_script(_CREATE)
        self._handled = client.register_script(_HANDLED)
        self._thread = threading.local()

    def known(self) -> dict[int, bytes]:
        """This thread's records as it last read or wrote them (jobid → stored JSON)."""
        known: dict[int, bytes] | None = getattr(self._thread, "records", None)
        if known is None:
            known = self._thread.records = {}
        return known

    def _remember(self, jobid: int, raw: bytes) -> None:
        known = self.known()
        if len(known) >= KNOWN_MAX and jobid not in known:  # a process that is no task's
            known.clear()
        known[jobid] = raw

    def start_known(self, jobid: int | None = None, raw: bytes | None = None) -> None:
        """Forget what this thread knew; with ``raw``, know job ``jobid``'s record as that."""
        self._thread.records = {} if jobid is None or raw is None else {jobid: raw}

    def get(self, jobid: int) -> JobRecord | None:
        """Return the record of ``jobid``, or None (always read from Redis)."""
        raw: Any = self.client.get(self.keys.job(jobid))
        if raw is None:
            self.known().pop(jobid, None)
            return None
        self._remember(jobid, raw)
        return JobRecord.model_validate_json(raw)

    def latest(self, jobid: int) -> JobRecord | None:
        """The record as this thread last read or wrote it, else as :meth:`get` reads it.

        For a task holding the job's lock: the copy its start read along with the lock
        (``start_known``) or its own last write, which no other lock holder can have
        changed since. No round trip when the thread knows the record.
        """
        raw = self.known().get(jobid)
        return self.get(jobid) if raw is None else JobRecord.model_validate_json(raw)

    def create(self, record: JobRecord) -> bool:
        """Store ``record`` unless one exists; return whether it was created."""
        written = record.model_dump_json()
        created: Any = self._create(
            keys=[
                self.keys.job(record.jobid),
                self.keys.jobs_index,
                self.keys.observed,
                self.keys.marks(record.jobid),
                self.keys.resync_due,
            ],
            args=[written, record.jobid, observed_entry(record), look_at(record, None)],
        )
        if created:
            self._remember(record.jobid, written.encode())
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
        known = self.known()
        raw: Any = known.pop(jobid, None)
        trusted = raw is None  # a remembered record is confirmed before a no-op trusts it
        if raw is None:
            raw = self.client.get(key)
        for _ in range(MAX_ATTEMPTS):
            if raw is None and default is None:
                return None
            current = default if raw is None else JobRecord.model_validate_json(raw)
            assert current is not None
            new = change(current.model_copy(deep=True))
            if raw is not None and (new is None or new == current):
                if not trusted:
                    fresh: Any = self.client.get(key)
                    if fresh != raw:  # decided on a record changed since: again, afresh
                        raw, trusted = fresh, True
                        continue
                self._remember(jobid, raw)
                return current
            if new is None:
                new = current
            elif new != current:
                new = new.model_copy(update={"version": current.version + 1})
            written = new.model_dump_json()
            stored = self._compare_and_set(
                keys=[
                    key,
                    self.keys.jobs_index,
                    self.keys.observed,
                    self.keys.marks(jobid),
                    self.keys.resync_due,
                ],
                args=[
                    b"" if raw is None else raw,
                    written,
                    jobid,
                    observed_entry(new) if raw is None or new_read(new, current) else "",
                    look_at(new, None if raw is None else current),
                ],
            )
            if stored:
                self._remember(jobid, written.encode())
                return new
            raw, trusted = self.client.get(key), True  # it moved: read it and go again
        raise StoreConflict(f"job {jobid}: record kept changing during {MAX_ATTEMPTS} attempts")

    def delete(self, jobid: int) -> None:
        """Forget ``jobid`` (missing is fine)."""
        self.known().pop(jobid, None)
        pipe = self.client.pipeline()
        pipe.delete(self.keys.job(jobid), self.keys.marks(jobid))
        pipe.srem(self.keys.jobs_index, jobid)
        pipe.hdel(self.keys.observed, jobid)
        pipe.hdel(self.keys.handled, jobid)
        pipe.zrem(self.keys.resync_due, jobid)
        pipe.execute()

    def tracked(self, jobid: int) -> bool:
        """Whether the pipeline tracks ``jobid``: it has a record, or the watcher saw an
        event of its Workflow (:meth:`finish` forgets both)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.sismember(self.keys.jobs_index, str(jobid))
        pipe.hexists(self.keys.workflow_seen, str(jobid))
        return any(pipe.execute())

    def finish(self, jobid: int, retain_s: float) -> None:
        """Stop tracking ``jobid``: its record and marks expire ``retain_s`` from now, and
        its :data:`ENDED` mark tells a late or duplicate task that the job is over.

        Idempotent; a later update keeps the expiry (``SET KEEPTTL``).
        """
        ms = max(1, int(retain_s * 1000))
        pipe = self.client.pipeline()
        pipe.hset(self.keys.marks(jobid), ENDED, "1")
        pipe.srem(self.keys.jobs_index, jobid)
        pipe.pexpire(self.keys.job(jobid), ms)
        pipe.pexpire(self.keys.marks(jobid), ms)
        pipe.hdel(self.keys.workflow_seen, jobid)
        pipe.hdel(self.keys.observed, jobid)
        pipe.hdel(self.keys.handled, jobid)
        pipe.zrem(self.keys.resync_due, jobid)
        pipe.execute()

    def records(self) -> list[JobRecord]:
        """Return the record of every tracked job, by jobid (one round trip for the lot)."""
        ids = self.jobids()
        raws: Any = self.client.mget([self.keys.job(j) for j in ids]) if ids else []
        return [JobRecord.model_validate_json(raw) for raw in raws if raw is not None]

    def observed(self) -> dict[int, tuple[str, float]]:
        """Each tracked job's last observe, ``(observed_rv, observed_at)``, in one round trip
        and without reading the records (a job not yet observed: ``("", 0.0)``)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.smembers(self.keys.jobs_index)
        pipe.hgetall(self.keys.observed)
        members, entries = pipe.execute()
        notes = parse_notes(entries)  # unreadable: as never observed, so observed again
        return {int(m): notes.get(int(m), ("", 0.0)) for m in members}

    def handled_in(self, pipe: Any, jobid: int, resource_version: str) -> None:
        """Add to ``pipe`` the note that ``jobid``'s observe of its Workflow at
        ``resource_version`` decided and acted (:meth:`handled` reads it back)."""
        eval_in(
            pipe,
            self._handled,
            [self.keys.jobs_index, self.keys.handled],
            [jobid, resource_version],
        )

    def handled(self) -> dict[int, str]:
        """Each tracked job's last finished observe: jobid → the resourceVersion it acted on
        (a job none finished for is absent)."""
        raw: Any = self.client.hgetall(self.keys.handled)
        out: dict[int, str] = {}
        for key, value in raw.items():
            with suppress(ValueError):
                out[int(key)] = value.decode()
        return out

    def jobids(self) -> list[int]:
        """Return the ids of the tracked jobs, ascending."""
        members: Any = self.client.smembers(self.keys.jobs_index)
        return sorted(int(m) for m in members)
