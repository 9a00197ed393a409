"""Deadlines: a Redis sorted set (score = due time, member = ``<jobid>:<kind>:<token>``).

The beat task sweeps it every second; :meth:`Deadlines.claim_due` pops due
members atomically (one Lua script), so two sweepers never fire the same
deadline. Firing re-checks the job: a deadline whose job moved on is a no-op.

Each job's members are also indexed (``<prefix>:deadlines-of:<jobid>``, written
with the member): :meth:`Deadlines.cancel_kind` disarms every member of a kind,
whatever its token — the arming of a task killed before the job's record held
the token included, which would otherwise stay armed until it fell due.

Given ``note_as``, the same script notes each claimed deadline in the
sent-task ledger (``pipeline/store/ledger.py``, same entry format) as a
message of that task, under the id ``<note_as>:<member>``: a sweeper
killed between the claim and the send loses nothing, since
``housekeeping.redeliver`` sends the noted message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from pipeline.errors import InputError
from pipeline.store.clock import GRACE_S, REBASE
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

#: KEYS: deadlines, ledger, ledger-due. ARGV: now, limit, task to note as ("": none),
#: when to resend, the per-job index's key prefix. The entry is built as text so a
#: 64-bit jobid stays exact.
#: KEYS: deadlines, ledger, ledger-due, the clock. ARGV: now, limit, the task to note as,
#: its resend time, the index keys' prefix, grace. The clock step is taken in the same
#: step as the claim: between two steps another host's write, its clock not yet stepped,
#: could move every due time back into the frame of the old clock, and a claim at the
#: new clock would fire each deadline of the coming hour.
_CLAIM = (
    REBASE
    + """
local moved = rebase(KEYS[4], {KEYS[1], KEYS[3]}, tonumber(ARGV[1]), tonumber(ARGV[6]))
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #due, 2 do
  local member, score = due[i], due[i + 1]
  redis.call('zrem', KEYS[1], member)
  local jobid, kind, token = string.match(member, '^(%d+):([^:]+):(.*)$')
  if jobid then redis.call('srem', ARGV[5] .. jobid, member) end
  if ARGV[3] ~= '' and jobid then
    local id = ARGV[3] .. ':' .. member
    local entry = '{"name":' .. cjson.encode(ARGV[3]) .. ',"kwargs":{"jobid":' .. jobid
      .. ',"kind":' .. cjson.encode(kind) .. ',"token":' .. cjson.encode(token)
      .. ',"due":' .. score .. '},"queue":null,"first_sent":' .. ARGV[1] .. '}'
    redis.call('hset', KEYS[2], id, entry)
    redis.call('zadd', KEYS[3], ARGV[4], id)
  end
end
table.insert(due, 1, tostring(moved))
return due
"""
)

#: KEYS: the clock, deadlines, ledger-due. ARGV: now, grace.
_REBASE = (
    REBASE
    + """
return tostring(rebase(KEYS[1], {KEYS[2], KEYS[3]}, tonumber(ARGV[1]), tonumber(ARGV[2])))
"""
)
#: KEYS: the clock, deadlines, ledger-due, the job's index. ARGV: now, grace, due, member,
#: the index's lifetime.
_ADD = (
    REBASE
    + """
rebase(KEYS[1], {KEYS[2], KEYS[3]}, tonumber(ARGV[1]), tonumber(ARGV[2]))
redis.call('zadd', KEYS[2], ARGV[3], ARGV[4])
redis.call('sadd', KEYS[4], ARGV[4])
redis.call('expire', KEYS[4], ARGV[5])
"""
)
#: KEYS: deadlines, the job's index. ARGV: the members' prefix (``<jobid>:<kind>:``).
_CANCEL_KIND = """
local n = 0
for _, member in ipairs(redis.call('smembers', KEYS[2])) do
  if string.sub(member, 1, #ARGV[1]) == ARGV[1] then
    n = n + redis.call('zrem', KEYS[1], member)
    redis.call('srem', KEYS[2], member)
  end
end
return n
"""
#: How long a job's index outlives its latest arming (s): longer than any deadline.
INDEX_TTL_S = 30 * 24 * 3600


@dataclass(frozen=True)
class Deadline:
    """One deadline: which job, what kind, which arming (token), when."""

    jobid: int
    kind: str
    token: str
    due: float

    @property
    def member(self) -> str:
        """The sorted-set member."""
        return f"{self.jobid}:{self.kind}:{self.token}"

    @classmethod
    def parse(cls, member: str, due: float) -> Deadline:
        """Rebuild a deadline from its member and score."""
        jobid, kind, token = member.split(":", 2)
        return cls(int(jobid), kind, token, due)


def noted_id(task: str, deadline: Deadline) -> str:
    """The ledger id (and task id) under which ``claim_due(note_as=task)`` notes ``deadline``."""
    return f"{task}:{deadline.member}"


@translated
class Deadlines:
    """The deadline set of one deployment."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._claim = client.register_script(_CLAIM)
        self._rebase = client.register_script(_REBASE)
        self._add = client.register_script(_ADD)
        self._cancel_kind = client.register_script(_CANCEL_KIND)

    def add(self, deadline: Deadline, now: float | None = None) -> None:
        """Arm ``deadline`` (re-adding the same member moves its due time). ``now``: the
        clock its due time was read from, just before; every due time first moves with a
        clock step since the last write (:mod:`pipeline.store.clock`). None: a due time
        that follows no clock (tests of the set itself)."""
        if ":" in deadline.kind:
            raise InputError(f"deadline kind {deadline.kind!r} must not contain ':'")
        keys = [self.keys.sweep_clock, self.keys.deadlines, self.keys.ledger_due]
        keys.append(self.keys.deadlines_of(deadline.jobid))
        if now is None:
            pipe = self.client.pipeline(transaction=True)
            pipe.zadd(self.keys.deadlines, {deadline.member: deadline.due})
            pipe.sadd(keys[-1], deadline.member)
            pipe.expire(keys[-1], INDEX_TTL_S)
            pipe.execute()
        else:
            args = [repr(now), repr(GRACE_S), repr(deadline.due), deadline.member]
            self._add(keys=keys, args=[*args, INDEX_TTL_S])

    def cancel(self, deadline: Deadline) -> bool:
        """Disarm ``deadline``; return whether it was armed."""
        pipe = self.client.pipeline(transaction=True)
        pipe.zrem(self.keys.deadlines, deadline.member)
        pipe.srem(self.keys.deadlines_of(deadline.jobid), deadline.member)
        removed, _ = pipe.execute()
        return bool(removed)

    def cancel_kind(self, jobid: int, kind: str) -> int:
        """Disarm every deadline ``kind`` of ``jobid``, whatever its token; return how many
        were armed."""
        keys = [self.keys.deadlines, self.keys.deadlines_of(jobid)]
        removed: Any = self._cancel_kind(keys=keys, args=[f"{jobid}:{kind}:"])
        return int(removed)

    def rebase(self, now: float, grace_s: float = GRACE_S) -> float:
        """Note ``now`` as the store's clock; if it moved more than ``grace_s`` back or
        forward since the last write (a clock step, or the pipeline not running), move
        every deadline and every ledger resend by as much, in one Redis step, and return
        the move (0.0: none): :mod:`pipeline.store.clock`."""
        keys = [self.keys.sweep_clock, self.keys.deadlines, self.keys.ledger_due]
        moved: Any = self._rebase(keys=keys, args=[repr(now), repr(grace_s)])
        return float(moved)

    def claim_due(
        self, now: float, *, limit: int = 500, note_as: str = "", resend_after_s: float = 0.0
    ) -> list[Deadline]:
        """Remove and return up to ``limit`` deadlines due at ``now``, earliest first, after
        moving every due time with a clock step (:meth:`sweep`, its move dropped)."""
        return self.sweep(now, limit=limit, note_as=note_as, resend_after_s=resend_after_s)[1]

    def sweep(
        self, now: float, *, limit: int = 500, note_as: str = "", resend_after_s: float = 0.0
    ) -> tuple[float, list[Deadline]]:
        """In one step: move every due time with a clock step since the store last saw the
        clock (:mod:`pipeline.store.clock`), then remove and return up to ``limit``
        deadlines due at ``now``, earliest first. Returns the move (0: none) and them.

        ``note_as``: in the same step, note each in the ledger as a message of
        that task (kwargs ``jobid``, ``kind``, ``token``, ``due``; id
        :func:`noted_id`), to be sent again ``resend_after_s`` from ``now``.
        """
        keys = [self.keys.deadlines, self.keys.ledger, self.keys.ledger_due]
        keys.append(self.keys.sweep_clock)
        args: list[str | int] = [repr(now), limit, note_as, repr(now + resend_after_s)]
        args.append(self.keys.deadlines_of(0)[:-1])  # the index keys' prefix
        args.append(repr(GRACE_S))
        flat: Any = self._claim(keys=keys, args=args)
        moved, rows = float(flat[0]), flat[1:]
        pairs = zip(rows[0::2], rows[1::2], strict=True)
        return moved, [Deadline.parse(m.decode(), float(s)) for m, s in pairs]

    def pending(self) -> list[Deadline]:
        """Return every armed deadline, earliest first."""
        rows: Any = self.client.zrange(self.keys.deadlines, 0, -1, withscores=True)
        return [Deadline.parse(m.decode(), float(s)) for m, s in rows]
