"""Each Celery worker's heartbeat: which queues it serves, and when it last beat.

A worker killed outright takes with it the messages it had taken and not finished: the
ones it ran, and the ones it held in memory to run next. Kombu's ack emulation is off
(the ledger redelivers, ``pipeline.store.ledger``), so nothing in the broker remembers
them, and the ledger would send them again only ``resend_after`` later. Each worker
beats here every :data:`BEAT_S`; ``housekeeping.redeliver`` takes a worker silent for
:data:`DEAD_AFTER_S` for dead and sends again at once every message of its queues first
sent before its last beat that no longer waits in its queue. A copy of a message another
worker still runs is an idempotent no-op, as any late copy is. A worker that stops
cleanly says so (:meth:`Workers.gone`): it puts back what it held.

Key: ``<prefix>:workers`` (hash worker name → JSON ``{"at": epoch s, "queues": [...]}``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.store.connection import translated
from pipeline.store.keys import Keys

#: How often a worker beats (s).
BEAT_S = 1.0
#: How long a worker may be silent before it is taken for dead (s): well past a beat
#: delayed by a busy machine, well under ``resend_after``.
DEAD_AFTER_S = 6.0


@dataclass(frozen=True)
class Beat:
    """A worker's last heartbeat."""

    worker: str
    at: float
    queues: tuple[str, ...]


@translated
class Workers:
    """The workers' heartbeats (see the module docstring)."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.keys = client, keys

    def beat(self, worker: str, queues: Sequence[str], now: float) -> None:
        """``worker``, serving ``queues``, is alive at ``now``."""
        value = json.dumps({"at": round(now, 3), "queues": list(queues)})
        self.client.hset(self.keys.workers, worker, value)

    def gone(self, worker: str) -> None:
        """``worker`` stopped cleanly (it put back what it held)."""
        self.client.hdel(self.keys.workers, worker)

    def beats(self) -> list[Beat]:
        """Every worker's last heartbeat (one that cannot be read is left out)."""
        raw: Any = self.client.hgetall(self.keys.workers)
        out = []
        for name, value in raw.items():
            try:
                data = json.loads(value)
                out.append(Beat(_text(name), float(data["at"]), tuple(map(str, data["queues"]))))
            except (ValueError, KeyError, TypeError):
                continue
        return out

    def dead(self, now: float, after_s: float = DEAD_AFTER_S) -> list[Beat]:
        """The workers silent for more than ``after_s`` at ``now``."""
        return [beat for beat in self.beats() if now - beat.at > after_s]

    def forget(self, beats: Sequence[Beat]) -> None:
        """Forget dead workers once their messages were sent again (a worker that was only
        slow beats again, and is known again)."""
        if beats:
            self.client.hdel(self.keys.workers, *(b.worker for b in beats))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
