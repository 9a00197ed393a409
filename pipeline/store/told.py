"""What the pipeline last told Flux of each rabbit, changed only with the messages that
tell it.

``<prefix>:rabbits-told`` maps a rabbit to its :class:`~pipeline.model.told.Told`.
:meth:`RabbitsTold.change` reads it under WATCH, applies a pure function of the record
(one of the rabbit-health rules), then appends the change's outbox messages and writes
the new record in one transaction: a crash sends all of them or none, a replayed
Storage event finds nothing new to say, and two observes of one rabbit at once cannot
both send. :meth:`RabbitsTold.replace` writes a change decided on a record
read before, only if the record is still that one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import redis

from pipeline.errors import StoreConflict
from pipeline.model.told import Change, Told
from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys
from pipeline.store.outbox import Outbox, OutboxMessage


@translated
class RabbitsTold:
    """The per-rabbit record of what Flux knows."""

    def __init__(self, client: redis.Redis, keys: Keys, outbox: Outbox) -> None:
        self.client, self.key, self.outbox = client, keys.rabbits_told, outbox

    def get(self, rabbit: str) -> Told:
        """What Flux was last told of ``rabbit``."""
        raw = self.client.hget(self.key, rabbit)
        return Told.from_json(json.loads(raw)) if raw else Told()

    def change(self, rabbit: str, change: Callable[[Told], Change], attempts: int = 10) -> Change:
        """Apply ``change`` to the record of ``rabbit``; send its messages and keep its
        record (retried on the record as it then is, should another writer come between)."""
        for _ in range(attempts):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(self.key)  # type: ignore[no-untyped-call]
                    raw: Any = pipe.hget(self.key, rabbit)
                    told = Told.from_json(json.loads(raw)) if raw else Told()
                    after = change(told)
                    if not after.messages and after.told == told:
                        return after
                    pipe.multi()
                    for message in after.messages:
                        entry = OutboxMessage(message.kind, None, message.payload)
                        self.outbox.queue_append(pipe, entry)
                    pipe.hset(self.key, rabbit, json.dumps(after.told.to_json()))
                    pipe.execute()
                    return after
                except redis.WatchError:
                    continue
                except redis.RedisError as exc:
                    raise store_errors(exc) from exc
        raise StoreConflict(f"rabbit {rabbit}'s record kept changing; try again")

    def replace(self, rabbit: str, before: Told, change: Change) -> None:
        """Send ``change``'s messages and keep its record if ``rabbit``'s record is still
        ``before``; raise :class:`~pipeline.errors.StoreConflict` (decide again) if not."""

        def unless_moved(now: Told) -> Change:
            if now != before:
                raise StoreConflict(f"rabbit {rabbit}'s record changed since it was read")
            return change

        self.change(rabbit, unless_moved)

    def forget(self, rabbit: str) -> None:
        """Drop the record of a rabbit whose Storage is gone."""
        self.client.hdel(self.key, rabbit)
