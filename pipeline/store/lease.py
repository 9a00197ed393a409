"""A leader lease in Redis: one holder at a time, named, taken over once it expires.

The watcher and beat each run as several replicas, one of them active: the
holder of a lease. The lease is a key whose value names its holder
(``host:pid:token``) and whose expiry is the lease; the holder renews it
well within that. A holder that dies, or is frozen (SIGSTOP), stops
renewing, and another replica takes the lease over once it expires. A key
someone set by hand without an expiry would block every replica forever:
the first one to try gives it the lease's expiry, so it too is taken over.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any

import redis

from pipeline.store.connection import translated

# KEYS[1]: the lease; ARGV: identity, lease ms. Returns 1 when ARGV[1] holds it now.
_HOLD = """
local holder = redis.call('get', KEYS[1])
if not holder then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return 1
end
if holder == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if redis.call('pttl', KEYS[1]) == -1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RESIGN = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def identity() -> str:
    """A name for this process as a lease holder: ``host:pid:token``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@translated
class Lease:
    """The lease kept at ``key``."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = key
        self._hold: Any = client.register_script(_HOLD)
        self._resign: Any = client.register_script(_RESIGN)

    def hold(self, holder: str, lease_s: float) -> bool:
        """Take the lease, or renew it if ``holder`` has it; return whether it does now."""
        ms = max(1, int(lease_s * 1000))
        return bool(self._hold(keys=[self.key], args=[holder, ms]))

    def note(self, key: str, value: str) -> None:
        """Write ``value`` at ``key``: what the holder did last (beat's tick)."""
        self.client.set(key, value)

    def resign(self, holder: str) -> None:
        """Give the lease up at once if ``holder`` has it."""
        self._resign(keys=[self.key], args=[holder])

    def holder(self) -> str | None:
        """Who holds the lease (None: nobody)."""
        raw: Any = self.client.get(self.key)
        return raw.decode() if isinstance(raw, bytes) else None
