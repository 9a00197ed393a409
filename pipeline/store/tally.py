"""Node answers counted without the job's lock: one ``SADD`` per answer.

A job on 11,136 nodes gets 11,136 answers to its prolog; taken one at a time
under the job's lock, each rewriting a record that lists every node, they
would cost time quadratic in the job's size. Here each answer adds its node
to a set and reads, in the same transaction, how many have answered, how
many are expected, and the job's flags; only the answer that completes the
set (``SADD`` said it was new and the count reached the expected number)
goes on to the locked decision. Duplicates add nothing.

The flags are facts the answers act on without the lock: ``mounted`` (a
``#DW`` job's PreRun is complete, so a node that answers now is told to stop
clientmount at once). The side that sets a flag reads the set in the same
transaction, and an answer adds itself before it reads the flag, so every
node is told at least once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from pipeline.model.answers import Phase
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

#: How long the tally outlives its last change (s): longer than any job's node work.
TTL_S = 7 * 24 * 3600


@dataclass(frozen=True)
class Counted:
    """What one answer learned: whether it was new, the count, the expected count, and
    the job's flags."""

    new: bool
    count: int
    expected: int
    flags: frozenset[str]

    @property
    def completes(self) -> bool:
        """The set is complete with this answer. A copy of the answer that completed it
        completes it too: the first run may have died between counting and sending the
        decision, which is idempotent (so is a second one)."""
        return self.expected > 0 and self.count == self.expected


@translated
class Tally:
    """The per-job answer sets (see the module docstring)."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys

    def expect(self, jobid: int, count: int, phase: Phase = Phase.PROLOG) -> None:
        """The job's node work waits for ``count`` nodes in ``phase`` (the prolog's count
        holds for its ``stopped`` phase too; the epilog's ``clean`` phase has its own)."""
        meta = self.keys.tally_meta(jobid)
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(meta, _expected_field(phase), count)
        pipe.expire(meta, TTL_S)
        pipe.execute()

    def add(self, jobid: int, phase: Phase, node: str, *, ends: str | None = None) -> Counted:
        """Count ``node``'s answer to ``phase``; with ``ends`` (the id of the node task the
        answer ends), cross that task out of the ledger in the same transaction: an answer
        costs one round trip, and the count never goes without the crossing out."""
        return self.add_all(jobid, phase, [node], ends=[ends] if ends is not None else [])

    def add_all(
        self, jobid: int, phase: Phase, nodes: Sequence[str], *, ends: Sequence[str] = ()
    ) -> Counted:
        """:meth:`add` for a batch of ``nodes`` (and the node tasks they end), in one
        transaction; ``new`` says whether any of them was new."""
        key, meta = self.keys.tally(jobid, phase), self.keys.tally_meta(jobid)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(key, *nodes)
        pipe.expire(key, TTL_S)
        pipe.scard(key)
        pipe.hgetall(meta)
        if ends:
            pipe.hdel(self.keys.ledger, *ends)
            pipe.zrem(self.keys.ledger_due, *ends)
        added, _, count, fields = pipe.execute()[:4]
        expected = int(fields.get(_expected_field(phase).encode(), 0))
        flags = frozenset(
            k.decode() for k, v in fields.items() if not k.startswith(b"expected") and v == b"1"
        )
        return Counted(bool(added), int(count), expected, flags)

    def flag(self, jobid: int, name: str, phase: Phase) -> set[str]:
        """Set flag ``name`` and return the nodes that had answered ``phase`` by then."""
        key, meta = self.keys.tally(jobid, phase), self.keys.tally_meta(jobid)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(meta, name, "1")
        pipe.expire(meta, TTL_S)
        pipe.smembers(key)
        _, _, members = pipe.execute()
        return {m.decode() for m in members}

    def nodes(self, jobid: int, phase: Phase) -> set[str]:
        """The nodes that answered ``phase``."""
        members: set[bytes] = self.client.smembers(self.keys.tally(jobid, phase))  # type: ignore[assignment]
        return {m.decode() for m in members}

    def forget(self, jobid: int, phase: Phase = Phase.PROLOG) -> None:
        """Drop the answers of ``phase`` (``prolog``: with its ``stopped`` phase and the
        flags; ``clean``: the epilog's), and their expected count."""
        meta = self.keys.tally_meta(jobid)
        phases = (Phase.PROLOG, Phase.STOPPED) if phase == Phase.PROLOG else (phase,)
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(*(self.keys.tally(jobid, p) for p in phases))
        if phase == Phase.PROLOG:
            pipe.hdel(meta, "expected", "mounted")
        else:
            pipe.hdel(meta, _expected_field(phase))
        pipe.execute()


def _expected_field(phase: Phase) -> str:
    """The meta field of ``phase``'s expected count: the prolog's serves its ``stopped``
    phase too."""
    return "expected" if phase in (Phase.PROLOG, Phase.STOPPED) else f"expected:{phase}"
