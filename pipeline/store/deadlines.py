"""Deadlines: a Redis sorted set (score = due time, member = ``<jobid>:<kind>:<token>``).

The beat task sweeps it every second; :meth:`Deadlines.claim_due` pops due
members atomically (one Lua script), so two sweepers never fire the same
deadline. Firing re-checks the job: a deadline whose job moved on is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from pipeline.errors import InputError
from pipeline.store.connection import store_errors
from pipeline.store.keys import Keys

_CLAIM = """
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #due, 2 do redis.call('zrem', KEYS[1], due[i]) end
return due
"""


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


class Deadlines:
    """The deadline set of one deployment."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._claim = client.register_script(_CLAIM)

    def add(self, deadline: Deadline) -> None:
        """Arm ``deadline`` (re-adding the same member moves its due time)."""
        if ":" in deadline.kind:
            raise InputError(f"deadline kind {deadline.kind!r} must not contain ':'")
        try:
            self.client.zadd(self.keys.deadlines, {deadline.member: deadline.due})
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def cancel(self, deadline: Deadline) -> bool:
        """Disarm ``deadline``; return whether it was armed."""
        try:
            return bool(self.client.zrem(self.keys.deadlines, deadline.member))
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def claim_due(self, now: float, *, limit: int = 500) -> list[Deadline]:
        """Remove and return up to ``limit`` deadlines due at ``now``, earliest first."""
        try:
            flat: Any = self._claim(keys=[self.keys.deadlines], args=[repr(now), limit])
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        pairs = zip(flat[0::2], flat[1::2], strict=True)
        return [Deadline.parse(m.decode(), float(s)) for m, s in pairs]

    def pending(self) -> list[Deadline]:
        """Return every armed deadline, earliest first."""
        try:
            rows: Any = self.client.zrange(self.keys.deadlines, 0, -1, withscores=True)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return [Deadline.parse(m.decode(), float(s)) for m, s in rows]
