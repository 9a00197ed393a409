"""The ledger of sent tasks: every task message we send, until its task has an outcome.

Celery on Redis loses a message in one window: a worker takes it from the
queue (``BRPOP``) and only then records it as unacknowledged; a worker
killed in between takes the message with it, and nothing in the broker
remembers it. A lost ``dws.setup`` would leave its job in the prolog
forever, as nothing about its Workflow changes again.

So a message is written here before it is published (:meth:`Ledger.note`)
and crossed out when its task ends, in success or for good
(:meth:`Ledger.done`). The beat task ``housekeeping.redeliver`` sends again
each entry with no outcome ``resend_after`` seconds after it was sent, then
after twice as long, and so on (at most ``resend_cap`` apart): a
duplicate costs an idempotent no-op, a lost message costs a job.

Keys: ``<prefix>:ledger`` (hash task id → JSON entry) and
``<prefix>:ledger-due`` (sorted set task id → when to send it again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.store.clock import GRACE_S, REBASE
from pipeline.store.connection import eval_in, translated
from pipeline.store.keys import Keys

#: The longest wait between two sends of one task message (s), unless told otherwise.
RESEND_CAP_S = 3600.0

#: KEYS: the clock, deadlines, ledger-due, ledger. ARGV: now, grace, then (due, task id,
#: entry) for each message.
_NOTE = (
    REBASE
    + """
rebase(KEYS[1], {KEYS[2], KEYS[3]}, tonumber(ARGV[1]), tonumber(ARGV[2]))
for i = 3, #ARGV, 3 do
  redis.call('hset', KEYS[4], ARGV[i + 1], ARGV[i + 2])
  redis.call('zadd', KEYS[3], ARGV[i], ARGV[i + 1])
end
"""
)
#: How many messages one call of the note script writes at most.
NOTE_BATCH = 1000
#: KEYS: the clock, deadlines, ledger-due. ARGV: now, grace, the resend time, the task id.
_POSTPONE = (
    REBASE
    + """
rebase(KEYS[1], {KEYS[2], KEYS[3]}, tonumber(ARGV[1]), tonumber(ARGV[2]))
redis.call('zadd', KEYS[3], 'XX', ARGV[3], ARGV[4])
"""
)


@dataclass(frozen=True)
class Entry:
    """One sent task message without an outcome."""

    task_id: str
    name: str
    kwargs: dict[str, Any]
    queue: str | None
    first_sent: float

    def next_wait(self, now: float, resend_after_s: float, cap_s: float = RESEND_CAP_S) -> float:
        """How long after a send at ``now`` to send again: the entry's age so far (so the
        waits double), at least ``resend_after_s``, at most ``cap_s``."""
        return min(max(now - self.first_sent, resend_after_s), cap_s)


@translated
class Ledger:
    """The sent-task ledger of one deployment."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._note = client.register_script(_NOTE)
        self._postpone = client.register_script(_POSTPONE)

    def note(
        self,
        task_id: str,
        name: str,
        kwargs: dict[str, Any],
        *,
        now: float,
        resend_after_s: float,
        queue: str | None = None,
    ) -> None:
        """Record that ``name(**kwargs)`` is about to be sent as ``task_id``. ``now``:
        the clock, read just before; every due time first moves with a clock step since
        the last write (:mod:`pipeline.store.clock`)."""
        self.note_all([(task_id, name, kwargs, queue)], now=now, resend_after_s=resend_after_s)

    def note_all(
        self,
        messages: Sequence[tuple[str, str, dict[str, Any], str | None]],
        *,
        now: float,
        resend_after_s: float,
    ) -> None:
        """:meth:`note` for each ``(task id, name, kwargs, queue)``, a thousand a round trip
        (a whole machine's node tasks in a dozen)."""
        keys = [self.keys.sweep_clock, self.keys.deadlines, self.keys.ledger_due]
        keys.append(self.keys.ledger)
        due = repr(now + resend_after_s)
        for start in range(0, len(messages), NOTE_BATCH):  # a script each: one EVALSHA
            args = [repr(now), repr(GRACE_S)]
            for task_id, name, kwargs, queue in messages[start : start + NOTE_BATCH]:
                entry = {"name": name, "kwargs": kwargs, "queue": queue, "first_sent": now}
                args += [due, task_id, json.dumps(entry, separators=(",", ":"))]
            self._note(keys=keys, args=args)

    def done(self, task_id: str) -> None:
        """Cross out ``task_id``: its task has an outcome (a no-op when not noted). No
        transaction: the entry goes first, and a due time left without one (a connection
        lost between the two) is crossed out when it comes due (:meth:`due`)."""
        pipe = self.client.pipeline(transaction=False)
        self.done_in(pipe, task_id)
        pipe.execute()

    def done_all(self, task_ids: Sequence[str]) -> None:
        """:meth:`done` for each of ``task_ids``, in one round trip."""
        if not task_ids:
            return
        pipe = self.client.pipeline(transaction=False)
        pipe.hdel(self.keys.ledger, *task_ids)
        pipe.zrem(self.keys.ledger_due, *task_ids)
        pipe.execute()

    def done_in(self, pipe: redis.client.Pipeline, task_id: str) -> None:
        """Queue crossing out ``task_id`` in ``pipe`` (with a task's other closing commands)."""
        pipe.hdel(self.keys.ledger, task_id)
        pipe.zrem(self.keys.ledger_due, task_id)

    def postpone(self, task_id: str, until: float, now: float | None = None) -> None:
        """Send ``task_id`` again no sooner than ``until`` — unless it is done meanwhile
        (``ZADD XX`` never brings a crossed-out entry back). ``now``: as
        :meth:`postpone_in`."""
        pipe = self.client.pipeline(transaction=False)
        self.postpone_in(pipe, task_id, until, now)
        pipe.execute()

    def postpone_all(self, until: Sequence[tuple[str, float]], now: float) -> None:
        """:meth:`postpone` each ``(task id, until)``, :data:`NOTE_BATCH` to a round trip."""
        for start in range(0, len(until), NOTE_BATCH):
            pipe = self.client.pipeline(transaction=False)
            for task_id, when in until[start : start + NOTE_BATCH]:
                self.postpone_in(pipe, task_id, when, now)
            pipe.execute()

    def postpone_in(
        self, pipe: redis.client.Pipeline, task_id: str, until: float, now: float | None = None
    ) -> None:
        """Queue :meth:`postpone` in ``pipe``; with ``now`` (the clock ``until`` was read
        from), every due time first moves with a clock step, in the same step."""
        if now is None:
            pipe.zadd(self.keys.ledger_due, {task_id: until}, xx=True)
            return
        keys = [self.keys.sweep_clock, self.keys.deadlines, self.keys.ledger_due]
        eval_in(pipe, self._postpone, keys, [repr(now), repr(GRACE_S), repr(until), task_id])

    def all_due_after_a_loss(self, generation: str, now: float) -> int:
        """Once per store generation (:meth:`pipeline.store.Store.generation`): when it is
        not the one this was last called with, Redis restarted or lost writes, and the
        message of any entry may be gone with them: every entry falls due at ``now``, not
        ``resend_after`` later (a message still in its queue is not sent twice: the
        redeliverer looks first). Returns how many were made due (0: the same generation)."""
        key = self.keys.ledger_generation
        if self.client.getset(key, generation) in (None, generation.encode()):
            return 0
        members: Any = self.client.zrange(self.keys.ledger_due, 0, -1)
        if members:
            self.client.zadd(self.keys.ledger_due, dict.fromkeys(members, now), xx=True)
        return len(members)

    def due(self, now: float, limit: int = 500) -> list[Entry]:
        """The entries to send again at ``now``, oldest due first, at most ``limit``.

        An entry whose JSON cannot be read is crossed out (and not returned):
        nothing could ever send it.
        """
        out: list[Entry] = []
        for task_id, entry in self._read("-inf", now, limit):
            if entry is None:
                self.done(task_id)
            else:
                out.append(entry)
        return out

    def get(self, task_id: str) -> Entry | None:
        """The entry of ``task_id``; None when it has none (done, or never sent)."""
        value: Any = self.client.hget(self.keys.ledger, task_id)
        return _parse(task_id, value)

    def get_all(self, task_ids: Sequence[str]) -> list[Entry | None]:
        """:meth:`get` for each of ``task_ids``, in one round trip."""
        if not task_ids:
            return []
        values: Any = self.client.hmget(self.keys.ledger, list(task_ids))
        return [_parse(t, v) for t, v in zip(task_ids, values, strict=True)]

    def unsettled(self, limit: int = 10) -> list[Entry]:
        """The ``limit`` entries due soonest, read only (for reports: nothing is crossed out)."""
        return [entry for _, entry in self._read("-inf", "+inf", limit) if entry is not None]

    def _read(
        self, low: float | str, high: float | str, limit: int
    ) -> list[tuple[str, Entry | None]]:
        """(task id, entry or None if unreadable) of the first ``limit`` due in [low, high]."""
        ids: Any = self.client.zrangebyscore(self.keys.ledger_due, low, high, 0, limit)
        raw: Any = self.client.hmget(self.keys.ledger, ids) if ids else []
        task_ids = [t.decode() if isinstance(t, bytes) else str(t) for t in ids]
        return [(t, _parse(t, v)) for t, v in zip(task_ids, raw, strict=True)]

    def scan(self, limit: int) -> tuple[list[Entry], bool]:
        """Up to ``limit`` entries in no particular order (reports: nothing is crossed out),
        and whether that was all of them. Unreadable ones are left out."""
        out: list[Entry] = []
        for task_id, value in self.client.hscan_iter(self.keys.ledger, count=500):
            if len(out) == limit:
                return out, False
            entry = _parse(task_id.decode(), value)
            if entry is not None:
                out.append(entry)
        return out, True

    def pending(self) -> int:
        """How many sent task messages have no outcome yet."""
        return int(self.client.zcard(self.keys.ledger_due))


def _parse(task_id: str, value: Any) -> Entry | None:
    if value is None:
        return None
    try:
        entry = json.loads(value)
        return Entry(
            task_id=task_id,
            name=str(entry["name"]),
            kwargs=dict(entry["kwargs"]),
            queue=entry.get("queue"),
            first_sent=float(entry["first_sent"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
