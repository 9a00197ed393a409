"""When ``dws.resync`` looks at a job again: ``<prefix>:resync-due``, jobid → epoch s.

Three per-job notes say whether a job's Workflow waits for an observe: the
watcher's latest event (``workflow-seen``), the last observe's read
(``observed``) and the version that observe finished with (``handled``).
Each write that can leave a job's latest version unobserved or unfinished
also puts the job in this sorted set, at the time it would become due —
``ZADD LT``, so an earlier time already there stands: the watcher's note of
an event (due :data:`LOST_AFTER_S` later), a sweep's note of a version the
watch never delivered (likewise), and an observe's read (due
:data:`UNFINISHED_AFTER_S` later). ``dws.resync`` reads only the members
that are due and their notes, decides, and moves each one on
(:meth:`ResyncDue.settle`) — later, or out of the set once nothing about it
can become due — only where its notes are still as it read them, so a note
written meanwhile is never dropped. A pass costs what changed, not what is
in flight; a full pass over every note now and then is the backstop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.model.numbers import natural_or_none
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

#: A Workflow event no observe has read after this long (s) was lost: resync observes it.
LOST_AFTER_S = 10.0

#: A job whose last observe read its Workflow but did not finish (its actions failed for
#: good, or kept failing) is observed again this long (s) after that read.
UNFINISHED_AFTER_S = 300.0

#: KEYS: resync-due, workflow-seen, observed. ARGV: per job, four: jobid, its seen note
#: and observed entry as read ("" = none), when to look again ("" = never). Moves each job
#: whose two notes are unchanged; returns how many moved.
_SETTLE = """
local moved = 0
for i = 1, #ARGV, 4 do
  local id = ARGV[i]
  if (redis.call('hget', KEYS[2], id) or '') == ARGV[i + 1]
      and (redis.call('hget', KEYS[3], id) or '') == ARGV[i + 2] then
    if ARGV[i + 3] == '' then
      redis.call('zrem', KEYS[1], id)
    else
      redis.call('zadd', KEYS[1], ARGV[i + 3], id)
    end
    moved = moved + 1
  end
end
return moved
"""


@dataclass(frozen=True)
class Notes:
    """A job's three notes as read, raw (``"<resourceVersion> <epoch s>"``; "" = none)."""

    tracked: bool
    seen: str
    observed: str
    handled: str


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else "" if raw is None else str(raw)


@translated
class ResyncDue:
    """The jobs ``dws.resync`` looks at next, and when."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._settle = client.register_script(_SETTLE)

    def look_in(self, pipe: Any, jobid: int, at: float) -> None:
        """Add to ``pipe``: look at ``jobid`` at ``at`` (epoch s) or sooner."""
        pipe.zadd(self.keys.resync_due, {str(jobid): at}, lt=True)

    def due(self, now: float, limit: int) -> list[int]:
        """Up to ``limit`` jobs to look at by ``now``, the longest due first."""
        raw: Any = self.client.zrangebyscore(self.keys.resync_due, "-inf", now, 0, limit)
        return [int(m) for m in raw]

    def notes(self, jobids: list[int]) -> dict[int, Notes]:
        """The notes of ``jobids``, in one round trip."""
        if not jobids:
            return {}
        keys = self.keys
        pipe = self.client.pipeline(transaction=False)
        pipe.smismember(keys.jobs_index, jobids)
        for key in (keys.workflow_seen, keys.observed, keys.handled):
            pipe.hmget(key, jobids)
        tracked, seen, observed, handled = pipe.execute()
        return {
            jobid: Notes(bool(t), _text(s), _text(o), _text(h))
            for jobid, t, s, o, h in zip(jobids, tracked, seen, observed, handled, strict=True)
        }

    def every_note(self) -> dict[int, Notes]:
        """The notes of every job any note names, in one round trip (the backstop pass)."""
        keys = self.keys
        pipe = self.client.pipeline(transaction=False)
        pipe.smembers(keys.jobs_index)
        for key in (keys.workflow_seen, keys.observed, keys.handled):
            pipe.hgetall(key)
        members, seen, observed, handled = pipe.execute()
        tracked = {_text(m) for m in members}
        seen, observed, handled = (
            {_text(k): _text(v) for k, v in raw.items()} for raw in (seen, observed, handled)
        )
        return {
            int(name): Notes(
                name in tracked, seen.get(name, ""), observed.get(name, ""), handled.get(name, "")
            )
            for name in tracked | seen.keys() | observed.keys() | handled.keys()
            if natural_or_none(name) is not None
        }

    def settle(self, moves: Iterable[tuple[int, Notes, float | None]]) -> int:
        """Move each ``(jobid, its notes as read, when to look again or None: never)``
        whose seen and observed notes are unchanged; return how many moved."""
        args: list[str] = []
        for jobid, notes, at in moves:
            args += [str(jobid), notes.seen, notes.observed, "" if at is None else repr(at)]
        if not args:
            return 0
        keys = self.keys
        moved: Any = self._settle(
            keys=[keys.resync_due, keys.workflow_seen, keys.observed], args=args
        )
        return int(moved)
