"""What the pipeline last told Flux of each rabbit, changed only with the messages that
tell it.

``<prefix>:rabbits-told`` maps a rabbit to its :class:`~pipeline.states.rabbits.Told`.
:meth:`RabbitsTold.tell` reads it under WATCH, lets the pure decision run, then
appends the decision's outbox messages and writes the new record in one
transaction: a crash sends all of them or none, a replayed Storage event finds
nothing new to say, and two observes of one rabbit at once cannot both send.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

import redis

from pipeline.states.rabbits import Decision, Told, daemon_down, free, hold
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

    def tell(self, rabbit: str, decide: Callable[[Told], Decision], attempts: int = 10) -> Decision:
        """Run ``decide`` on the record of ``rabbit``; send its messages and keep its record."""
        for _ in range(attempts):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(self.key)  # type: ignore[no-untyped-call]
                    raw: Any = pipe.hget(self.key, rabbit)
                    told = Told.from_json(json.loads(raw)) if raw else Told()
                    decision = decide(told)
                    if not decision.messages and decision.told == told:
                        return decision
                    pipe.multi()
                    for message in decision.messages:
                        entry = OutboxMessage(message.kind, None, message.payload)
                        self.outbox.queue_append(pipe, entry)
                    pipe.hset(self.key, rabbit, json.dumps(decision.told.to_json()))
                    pipe.execute()
                    return decision
                except redis.WatchError:
                    continue
                except redis.RedisError as exc:
                    raise store_errors(exc) from exc
        raise store_errors(redis.RedisError(f"rabbit {rabbit}'s record kept changing; try again"))

    def hold(self, rabbit: str, computes: Collection[str], epoch: str) -> None:
        """Note that a job gave ``computes`` of ``rabbit`` ``badrabbit`` in Flux incarnation
        ``epoch``: the rabbit's next Storage change decides them (:meth:`Told.hold`)."""
        self.tell(rabbit, lambda told: Decision([], told.hold(computes, epoch)))

    def hold_for(self, jobid: int, rabbits: Collection[str], epoch: str) -> None:
        """Job ``jobid`` holds ``rabbits`` (their ssds down) until :meth:`free_for`."""
        for rabbit in sorted(set(rabbits)):
            self.tell(rabbit, lambda told: hold(told, str(jobid), epoch))

    def free_for(self, jobid: int, rabbits: Collection[str], epoch: str) -> None:
        """Job ``jobid``'s hold on ``rabbits`` is over."""
        for rabbit in sorted(set(rabbits)):
            self.tell(rabbit, lambda told: free(told, str(jobid), epoch))

    def daemon_down(self, rabbit: str, epoch: str) -> None:
        """``rabbit``'s own ClientMount never came up: its ssds down until its Storage
        next changes (:func:`pipeline.states.rabbits.daemon_down`)."""
        self.tell(rabbit, lambda told: daemon_down(told, epoch))

    def forget(self, rabbit: str) -> None:
        """Drop the record of a rabbit whose Storage is gone."""
        self.client.hdel(self.key, rabbit)
