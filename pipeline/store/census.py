"""Which node workers are alive and how much node work waits, in one read-only script.

A node worker sets ``<key_prefix>:node-alive:<host>`` for each node it serves every
``pipeline.node_heartbeat`` seconds, each key expiring after three of them
(:mod:`node_worker.heartbeat`); its Redis user may write that key of its own node's and
no other, so a node speaks for itself alone. ``status`` and the exporter ask Redis, in
one ``EVALSHA_RO``, which of the expected computes have no such key and how many
messages wait on their queues: what they read does not grow with the machine (the
script walks the nodes inside Redis, a few milliseconds at 11,136), where ``CLIENT
LIST`` and one ``LLEN`` per node had cost the exporter a large share of a second."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.store.keys import Keys

#: Walks the hosts of ARGV[3..]: those with no heartbeat key, and the messages on their
#: queues (a queue key a node made something other than a list holds none).
_CENSUS = """
local alive, queue = ARGV[1], ARGV[2]
local silent, queued = {}, 0
for i = 3, #ARGV do
  local host = ARGV[i]
  if redis.call('EXISTS', alive .. host) == 0 then silent[#silent + 1] = host end
  local n = redis.pcall('LLEN', queue .. host)
  if type(n) == 'number' then queued = queued + n end
end
return {queued, silent}
"""


@dataclass(frozen=True)
class NodeCensus:
    """The computes expected to run a node worker, those of them with no heartbeat, and
    the messages waiting on their queues."""

    expected: int
    silent: list[str]
    queued: int

    @property
    def alive(self) -> int:
        return self.expected - len(self.silent)


class Census:
    """The census script of one store, loaded into Redis on first use."""

    def __init__(self, client: redis.Redis, keys: Keys, queue_prefix: str) -> None:
        self.client, self.keys, self.queue_prefix = client, keys, queue_prefix
        self._sha: str | None = None

    def take(self, hosts: list[str]) -> NodeCensus | None:
        """The census of ``hosts``; None when this Redis user may not run the script
        (``coral2-pipeline redis-acl`` grants the monitoring user ``EVALSHA_RO``).
        Raises a connection error as the store's other reads do."""
        if not hosts:
            return NodeCensus(0, [], 0)
        args = [self.keys.node_alive(""), self.queue_prefix, *hosts]
        try:
            answer: Any = self._run(args)
        except redis.exceptions.NoPermissionError:
            return None
        except redis.ResponseError as exc:
            if "NOPERM" in str(exc) or "unknown command" in str(exc):
                return None  # refused, or a Redis before 7.0 (no EVALSHA_RO)
            raise
        queued, silent = answer
        return NodeCensus(len(hosts), [_text(h) for h in silent], int(queued))

    def _run(self, args: list[str]) -> Any:
        if self._sha is not None:
            try:
                return self.client.evalsha_ro(self._sha, 0, *args)
            except redis.exceptions.NoScriptError:
                pass  # Redis restarted, or SCRIPT FLUSH: sent whole once more
        answer = self.client.eval_ro(_CENSUS, 0, *args)
        self._sha = _sha1(_CENSUS)
        return answer


def _sha1(script: str) -> str:
    return hashlib.sha1(script.encode(), usedforsecurity=False).hexdigest()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
