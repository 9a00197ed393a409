"""What the watcher and the observe tasks keep in Redis.

* The watcher's leader lease (an owner-token key with expiry) and where each
  watch resumes (its last handled resourceVersion).
* Per job: the latest Workflow event the watcher saw (``workflow-seen``) and
  the coalescing mark of an observe waiting in the queue (``observe-pending``).
* Per rabbit: the health the last Storage observe recorded.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from pipeline.store.connection import translated
from pipeline.store.keys import Keys
from pipeline.store.lease import Lease
from pipeline.store.resync import LOST_AFTER_S

#: A watch position to save: (its key, resourceVersion).
Checkpoint = tuple[str, str]

#: How far ahead of an event a job's resync due time must still be (s) for the watcher to
#: take it as standing, unwritten: ``dws.resync`` moves a due time only once it is due,
#: and management hosts keep their clocks far closer than this.
STANDING_S = 1.0

#: How many jobs' due times the watcher remembers before it forgets the passed ones.
REMEMBER_JOBS = 10_000

#: KEYS: workflow-seen, resync-due. ARGV: jobid, the note as read before ("" = none), the
#: new note, when ``dws.resync`` looks at it. Replaces the job's note only if it is still as
#: read: a newer event the watcher noted since is never overwritten by an older version
#: from a list.
_NOTE_IF_UNCHANGED = """
if (redis.call('hget', KEYS[1], ARGV[1]) or '') ~= ARGV[2] then return 0 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[3])
redis.call('zadd', KEYS[2], 'LT', ARGV[4], ARGV[1])
return 1
"""


@translated
class WatchState:
    """The watcher's lease and positions, the per-job event notes, the rabbits' health."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self.lease = Lease(client, keys.watcher_leader)
        self._note_if_unchanged = client.register_script(_NOTE_IF_UNCHANGED)
        #: jobid → the resync due time this process last wrote for it (epoch s)
        self._due: dict[int, float] = {}

    def _do(self, command: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.client, command)(*args, **kwargs)

    # --- leadership ------------------------------------------------------------------
    def lead(self, identity: str, lease_s: float) -> bool:
        """Take the leader lease, or renew it if ``identity`` holds it; return whether it
        does now (:class:`~pipeline.store.lease.Lease`)."""
        return self.lease.hold(identity, lease_s)

    def resign(self, identity: str) -> None:
        """Give the lease up at once if ``identity`` holds it."""
        self.lease.resign(identity)

    def leader(self) -> str | None:
        """Who holds the lease (None: nobody)."""
        return self.lease.holder()

    # --- watch positions ----------------------------------------------------------------
    def checkpoint(self, plural: str, rv: str) -> Checkpoint:
        """The position ``rv`` of the ``plural`` watch, to :meth:`save`."""
        return (self.keys.watch_rv(plural), rv)

    def resume_from(self, plural: str) -> str | None:
        """Where the ``plural`` watch resumes (None: list first)."""
        raw = self._do("get", self.keys.watch_rv(plural))
        return raw.decode() if isinstance(raw, bytes) else None

    def save(self, checkpoint: Checkpoint) -> None:
        """Keep a watch position."""
        self._do("set", *checkpoint)

    def forget(self, plural: str) -> None:
        """Forget where the ``plural`` watch was (it expired: relist)."""
        self._do("delete", self.keys.watch_rv(plural))

    # --- per job ------------------------------------------------------------------------
    def note_workflow(
        self, jobid: int, seen: str, at: float, *, wanted: bool, checkpoint: Checkpoint | None
    ) -> bool:
        """In one round trip: save ``checkpoint``, note the job's latest event ``seen``
        (seen at ``at``, epoch s), for ``dws.resync`` to look at unless observed by then,
        and, if ``wanted``, set its observe-pending mark. Return whether the mark was set
        by this call (no observe was pending: one must be sent).

        The due time is written only when it would move: every writer lowers it alone
        (``ZADD LT``) and ``dws.resync`` moves it only once it is due, so one this process
        wrote that is still :data:`STANDING_S` ahead stands, earlier than this event's."""
        pipe = self.client.pipeline(transaction=False)
        if checkpoint is not None:
            pipe.set(*checkpoint)
        pipe.hset(self.keys.workflow_seen, str(jobid), seen)
        standing = self._due.get(jobid)
        moves = standing is None or standing - STANDING_S <= at
        if moves:
            pipe.zadd(self.keys.resync_due, {str(jobid): at + LOST_AFTER_S}, lt=True)
        if wanted:
            pipe.set(self.keys.observe_pending(jobid), "1", nx=True, ex=PENDING_TTL_S)
        replies = pipe.execute()
        if moves:  # written: remembered only now
            self._remember(jobid, at + LOST_AFTER_S, at)
        return wanted and bool(replies[-1])

    def _remember(self, jobid: int, due: float, now: float) -> None:
        if len(self._due) >= REMEMBER_JOBS:
            self._due = {j: d for j, d in self._due.items() if d - STANDING_S > now}
        self._due[jobid] = due

    def note_missed(self, notes: list[tuple[int, bytes, str]], at: float) -> int:
        """Note Workflow versions the watcher missed, found by a list at ``at`` (epoch s):
        for each ``(jobid, the job's note as read before the list (b"" for none), the
        listed version's note)``, in one round trip, each only where the note is still as
        read. Return how many were noted (``dws.resync`` observes them as it does a lost
        observe)."""
        if not notes:
            return 0
        keys = [self.keys.workflow_seen, self.keys.resync_due]
        pipe = self.client.pipeline(transaction=False)
        for jobid, before, seen in notes:
            self._note_if_unchanged(
                keys=keys, args=[jobid, before, seen, repr(at + LOST_AFTER_S)], client=pipe
            )
        return sum(int(r) for r in pipe.execute())

    def mark_pending(self, jobid: int) -> bool:
        """Set the job's observe-pending mark; return whether it was not set already."""
        return bool(
            self._do("set", self.keys.observe_pending(jobid), "1", nx=True, ex=PENDING_TTL_S)
        )

    def unmark(self, jobid: int) -> None:
        """Drop the job's observe-pending mark (its observe was not sent after all)."""
        self._do("delete", self.keys.observe_pending(jobid))

    def seen(self) -> dict[bytes, bytes]:
        """Every job's latest event note, raw (``JobStore``'s ``parse_notes`` reads it)."""
        raw: dict[bytes, bytes] = self._do("hgetall", self.keys.workflow_seen)
        return raw

    # --- rabbits ------------------------------------------------------------------------
    def set_rabbit(self, name: str, health: dict[str, Any]) -> None:
        """Record rabbit ``name``'s health as its last Storage observe saw it."""
        self._do("hset", self.keys.rabbits, name, json.dumps(health))

    def forget_rabbit(self, name: str) -> None:
        """Forget rabbit ``name`` (its Storage is gone)."""
        self._do("hdel", self.keys.rabbits, name)


#: How long a job's observe-pending mark lives (s): it coalesces events while an observe
#: waits in the queue; should that message ever be lost, the next event or resync after
#: this long queues another (a duplicate observe is harmless, a stuck job is not).
PENDING_TTL_S = 30
