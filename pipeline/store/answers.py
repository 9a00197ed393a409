"""The stream of node answers (``<prefix>:answers``), read by the lifecycle workers.

Node workers append (``pipeline.platform.answers``); each lifecycle worker reads
through the consumer group ``lifecycle`` under its own Celery node name, counts a
batch, then acknowledges and deletes it in one round trip. A worker killed in the
middle of a batch reads its own pending entries first when it starts again under
the same name; entries a worker left and never came back for are claimed by
another once they have been pending ``reclaim_idle_s``. Counting an answer twice
counts it once (``pipeline.store.tally``), so a batch read again changes nothing.
"""

from __future__ import annotations

from typing import Any

import redis

from pipeline.store.connection import store_errors
from pipeline.store.streams import ensure_group

GROUP = "lifecycle"
Entry = tuple[str, dict[bytes, bytes]]


class AnswerStream:
    """Read, acknowledge and measure the answers stream."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client, self.key = client, key
        self._grouped = False

    def ensure_group(self) -> None:
        """Create the consumer group (idempotent), from the stream's beginning."""
        ensure_group(self.client, self.key, GROUP)
        self._grouped = True

    def read(self, consumer: str, count: int, block_ms: int | None, *, own: bool) -> list[Entry]:
        """Up to ``count`` entries for ``consumer``: with ``own``, those it took before and
        did not acknowledge (a restart's first read), else new ones, waiting up to
        ``block_ms`` for one. The group is made again should it vanish (NOGROUP)."""
        if not self._grouped:
            self.ensure_group()
        start = "0" if own else ">"
        for attempt in (1, 2):
            try:
                rows: Any = self.client.xreadgroup(
                    GROUP, consumer, {self.key: start}, count=count, block=None if own else block_ms
                )
                break
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc) or attempt == 2:
                    raise store_errors(exc) from exc
                self.ensure_group()
            except redis.RedisError as exc:
                raise store_errors(exc) from exc
        return [(_id(i), f) for _, entries in rows or [] for i, f in entries if f]

    def reclaim(self, consumer: str, idle_s: float, count: int) -> list[Entry]:
        """Up to ``count`` entries other consumers left pending ``idle_s`` or more."""
        if not self._grouped:
            self.ensure_group()
        try:
            claimed: Any = self.client.xautoclaim(
                self.key, GROUP, consumer, int(idle_s * 1000), "0-0", count=count
            )
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        return [(_id(i), f) for i, f in claimed[1] if f]

    def done(self, entry_ids: list[str]) -> None:
        """Acknowledge and delete ``entry_ids``, in one round trip."""
        if not entry_ids:
            return
        try:
            pipe = self.client.pipeline()
            pipe.xack(self.key, GROUP, *entry_ids)
            pipe.xdel(self.key, *entry_ids)
            pipe.execute()
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def waiting(self) -> int:
        """How many answers are in the stream, taken or not (0 when there is none)."""
        try:
            length: Any = self.client.xlen(self.key)
            return int(length)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc


def _id(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
