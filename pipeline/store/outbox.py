"""The flux outbox: a Redis stream of typed messages from the pipeline to Flux.

Workers never talk to Flux. They append messages here; the flux bridge (or
the simulated job manager) reads them through a consumer group and
acknowledges each after delivery, so a consumer that dies mid-delivery has
its messages handed to the next reader (:meth:`Outbox.read` first reclaims
entries left pending longer than ``reclaim_idle_s`` — looking for them at a
consumer's first read and then every quarter of that, not at every read:
one round trip per read, where reads come one per message or two).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

import redis

from pipeline.errors import InputError
from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys
from pipeline.store.streams import ensure_group

MessageKind = Literal[
    "resource-update",
    "prolog-remove",
    "epilog-remove",
    "exception",
    "kvs-put",
    "memo",
    "drain",
    "undrain",
    "set-property",
    "remove-property",
    "set-status",
    "event-post",
]
KINDS: frozenset[str] = frozenset(get_args(MessageKind))
GROUP = "flux"


class Seal(Protocol):
    """Signs the entries a worker appends; verifies those a reader takes
    (``pipeline.platform.sealing``)."""

    def sign(self, data: bytes) -> str: ...

    def check(self, data: bytes, signature: str) -> str | None:
        """Why ``signature`` does not prove ``data`` came from us, or None."""
        ...


def sealed_bytes(kind: str, jobid: str, payload: str) -> bytes:
    """What an entry's signature covers: its kind, its jobid and its payload."""
    return f"{kind}\n{jobid}\n{payload}".encode()


@dataclass(frozen=True)
class OutboxMessage:
    """One message to Flux; ``payload`` is the RPC payload as flux-coral2 sends it."""

    kind: str
    jobid: int | None
    payload: dict[str, Any]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"unknown outbox message kind {self.kind!r}; known: {sorted(KINDS)}")


@dataclass(frozen=True)
class Delivery:
    """A message read from the outbox, to be acknowledged by ``entry_id``; ``message`` is
    None for an entry that cannot be read (``problem`` says why, ``raw`` is what it holds)."""

    entry_id: str
    message: OutboxMessage | None
    attempt: int
    problem: str = ""
    raw: str = ""


# KEYS: the job's marks, the outbox; ARGV: (kind, jobid, payload, mark, signature) per
# message. Returns, per message, its entry id, or nil when its mark was already set.
_APPEND_ONCE = """
local out = {}
for i = 1, #ARGV, 5 do
  if redis.call('hexists', KEYS[1], ARGV[i + 3]) == 0 then
    local id = redis.call('xadd', KEYS[2], '*',
      'kind', ARGV[i], 'jobid', ARGV[i + 1], 'payload', ARGV[i + 2], 'sig', ARGV[i + 4])
    redis.call('hset', KEYS[1], ARGV[i + 3], id)
    out[#out + 1] = id
  else
    out[#out + 1] = false
  end
end
-- a safety net: the marks of a job that never gets a record (a hook for a job the
-- pipeline does not know) would otherwise stay for ever; a finished job's are dropped
-- sooner, and no job runs for a month
if redis.call('ttl', KEYS[1]) == -1 then redis.call('expire', KEYS[1], 2592000) end
return out
"""


@translated
class Outbox:
    """Append, read and acknowledge outbox messages. With a ``seal``, every entry appended
    is signed, and an entry read whose signature the seal does not accept comes back
    unreadable (set aside by the bridge, never delivered)."""

    def __init__(self, client: redis.Redis, keys: Keys, seal: Seal | None = None) -> None:
        self.client = client
        self.keys = keys
        self.seal = seal
        self._append_once = client.register_script(_APPEND_ONCE)
        self._grouped = False  # ensure_group ran; a NOGROUP answer makes read() run it again
        self._reclaimed_at: dict[str, float] = {}  # consumer → when it last looked (monotonic)

    def append_once(self, message: OutboxMessage, mark: str) -> str | None:
        """Append ``message`` unless the job's ``mark`` is set; set it in the same step.

        The mark and the message are written atomically (one Lua script), so a
        crash can neither lose the message nor send it twice; the mark holds the
        entry's id (:meth:`undelivered` tells whether it is still on its way).
        Returns the entry id, or None when the mark was already set.
        """
        if message.jobid is None:
            raise InputError("a once-only outbox message needs a jobid")
        return self.append_all_once(message.jobid, [(message, mark)])[0]

    def append_all_once(
        self, jobid: int, messages: Sequence[tuple[OutboxMessage, str]]
    ) -> list[str | None]:
        """:meth:`append_once` for each ``(message, mark)`` of job ``jobid``, in order, in
        one round trip (one script: all or none of them are written)."""
        if any(message.jobid != jobid for message, _ in messages):
            raise InputError(f"once-only outbox messages of job {jobid} must all carry its jobid")
        if not messages:
            return []
        args: list[str] = []
        for message, mark in messages:
            payload = json.dumps(message.payload, separators=(",", ":"))
            args += [
                message.kind,
                str(jobid),
                payload,
                mark,
                self._sign(message.kind, str(jobid), payload),
            ]
        entries: Any = self._append_once(keys=[self.keys.marks(jobid), self.keys.outbox], args=args)
        return [None if entry is None else str(entry.decode()) for entry in entries]

    def append(self, message: OutboxMessage) -> str:
        """Append ``message``; return its stream entry id."""
        entry: Any = self.client.xadd(self.keys.outbox, self._fields(message))
        return str(entry.decode())

    def queue_append(self, pipe: redis.client.Pipeline, message: OutboxMessage) -> None:
        """Queue the append of ``message`` in ``pipe`` (a transaction of the caller's)."""
        pipe.xadd(self.keys.outbox, self._fields(message))

    def _fields(self, message: OutboxMessage) -> dict[Any, Any]:
        jobid = "" if message.jobid is None else str(message.jobid)
        payload = json.dumps(message.payload, separators=(",", ":"))
        return {
            "kind": message.kind,
            "jobid": jobid,
            "payload": payload,
            "sig": self._sign(message.kind, jobid, payload),
        }

    def _sign(self, kind: str, jobid: str, payload: str) -> str:
        return "" if self.seal is None else self.seal.sign(sealed_bytes(kind, jobid, payload))

    def ensure_group(self) -> None:
        """Create the consumer group (idempotent), starting at the stream's beginning."""
        ensure_group(self.client, self.keys.outbox, GROUP)
        self._grouped = True

    def _unproven(self, fields: dict[bytes, bytes]) -> str | None:
        """Why the entry is not proven to come from a worker (with a seal), or None."""
        if self.seal is None:
            return None
        signature = fields.get(b"sig", b"").decode("ascii", "replace")
        if not signature:
            return "it is not signed"
        try:
            data = sealed_bytes(
                fields[b"kind"].decode(), fields[b"jobid"].decode(), fields[b"payload"].decode()
            )
        except (KeyError, UnicodeDecodeError) as exc:
            return f"it cannot be checked: {type(exc).__name__}: {exc}"
        return self.seal.check(data, signature)

    def _decode(self, entry_id: bytes, fields: dict[bytes, bytes], attempt: int) -> Delivery:
        """The entry's message; one that cannot be read, or is not proven to come from a
        worker, comes back as a :class:`Delivery` whose ``problem`` says why (its raw
        fields in ``raw``), for the reader to set aside."""
        try:
            unproven = self._unproven(fields)
            if unproven is not None:
                raise ValueError(f"refused: {unproven}")
            jobid = fields[b"jobid"].decode()
            payload = json.loads(fields[b"payload"])
            if not isinstance(payload, dict):
                raise ValueError(f"its payload is a JSON {type(payload).__name__}, not an object")
            message = OutboxMessage(
                kind=fields[b"kind"].decode(),
                jobid=int(jobid) if jobid else None,
                payload=payload,
            )
        except (KeyError, ValueError, RecursionError, InputError) as exc:
            raw = json.dumps(
                {
                    k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                    for k, v in fields.items()
                }
            )
            problem = f"{type(exc).__name__}: {exc}"
            return Delivery(entry_id.decode(), None, attempt, problem=problem, raw=raw)
        return Delivery(entry_id.decode(), message, attempt)

    def read(
        self,
        consumer: str,
        *,
        count: int = 100,
        block_ms: int | None = None,
        reclaim_idle_s: float = 30.0,
    ) -> list[Delivery]:
        """Return messages for ``consumer``: reclaimed stale ones first, then new ones.

        The consumer group is created on the first read, and again should the
        stream or group vanish (an admin's ``DEL``, a failover to a replica
        that lacked it): Redis then answers NOGROUP and the read is retried once.
        """
        if not self._grouped:
            self.ensure_group()
        try:
            return self._read(consumer, count, block_ms, reclaim_idle_s)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise store_errors(exc) from exc
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        self.ensure_group()
        return self._read(consumer, count, block_ms, reclaim_idle_s)

    def _read(
        self, consumer: str, count: int, block_ms: int | None, reclaim_idle_s: float
    ) -> list[Delivery]:
        out: list[Delivery] = []
        now = time.monotonic()
        if now - self._reclaimed_at.get(consumer, -float("inf")) >= reclaim_idle_s / 4:
            reclaimed: Any = self.client.xautoclaim(
                self.keys.outbox, GROUP, consumer, int(reclaim_idle_s * 1000), "0-0", count=count
            )
            out = [self._decode(i, f, 2) for i, f in reclaimed[1] if f]
            if len(out) < count:  # all reclaimed: none left to look for until next time
                self._reclaimed_at[consumer] = now
        if len(out) < count:
            rows: Any = self.client.xreadgroup(
                GROUP, consumer, {self.keys.outbox: ">"}, count=count - len(out), block=block_ms
            )
            for _, entries in rows or []:
                out.extend(self._decode(i, f, 1) for i, f in entries)
        return out

    def holds(self, entry_id: str) -> bool:
        """Whether entry ``entry_id`` is still in the outbox (not yet delivered, or set
        aside: both acknowledge and delete it)."""
        found: Any = self.client.xrange(self.keys.outbox, entry_id, entry_id, count=1)
        return bool(found)

    def undelivered(self, entry_ids: Sequence[str]) -> list[str]:
        """Those of ``entry_ids`` still in the outbox, in one round trip."""
        if not entry_ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for entry_id in entry_ids:
            pipe.xrange(self.keys.outbox, entry_id, entry_id, count=1)
        found: Any = pipe.execute()
        return [entry_id for entry_id, rows in zip(entry_ids, found, strict=True) if rows]

    def ack(self, *entry_ids: str) -> None:
        """Delete and acknowledge delivered entries, all in one round trip. No transaction:
        the entries go first, and one deleted but left pending (a connection lost between
        the two) leaves the group at the next sweep of stale entries (``XAUTOCLAIM`` drops
        what is deleted), never delivered again."""
        if not entry_ids:
            return
        pipe = self.client.pipeline(transaction=False)
        pipe.xdel(self.keys.outbox, *entry_ids)
        pipe.xack(self.keys.outbox, GROUP, *entry_ids)
        pipe.execute()

    def peek(self, limit: int) -> tuple[list[Delivery], bool]:
        """The first ``limit`` entries, delivered or not, read only (reports); and whether
        that was all of them. Entries that cannot be read are left out."""
        rows: Any = self.client.xrange(self.keys.outbox, count=limit + 1)
        out: list[Delivery] = []
        for entry_id, fields in rows[:limit]:
            delivery = self._decode(entry_id, fields, 0)
            if delivery.message is not None:  # not ours to judge here: a report
                out.append(delivery)
        return out, len(rows) <= limit

    def unacked(self) -> int:
        """How many entries a reader took and has not acknowledged (0: no reader yet)."""
        try:
            summary: Any = self.client.xpending(self.keys.outbox, GROUP)
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                return 0
            raise store_errors(exc) from exc
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return int(summary["pending"])

    def backlog(self) -> int:
        """Return how many entries are in the stream (delivered-but-unacked included)."""
        length: Any = self.client.xlen(self.keys.outbox)
        return int(length)
