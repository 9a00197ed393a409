"""What waits in a queue: a message the broker still holds is not lost.

The ledger sends again a message that has had no outcome for its wait, as the broker
may have lost it. But a message may only be waiting behind others: workers that fall
behind (a burst of jobs, a slow API server) leave messages in their queue for longer
than ``pipeline.resend_after``, and sending each of those again would add a copy behind
it for every one — a backlog that feeds itself.

So every message the pipeline sends carries, in the header :data:`SENT_HEADER`, when its
ledger entry says it was first sent. kombu's Redis transport pushes a message on the
left of its queue's list and workers take from the right: the rightmost message is the
oldest still waiting, and every message first sent at or after it is still waiting too
(or was lost behind it, and is sent again once the queue has moved past it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import redis

from pipeline.store.connection import refused_keys, store_errors

#: The header of every message the pipeline sends: when its ledger entry was first sent
#: (seconds since the epoch, by the sender's clock).
SENT_HEADER = "coral2_first_sent"

#: The header of a message ``housekeeping.redeliver`` sends again (true): the only way a
#: message whose run failed comes back (a failed run is acknowledged, its ledger entry
#: kept), so the only kind whose failed runs a worker reads before running it
#: (``pipeline.store.runs``).
RESENT_HEADER = "coral2_resent"

#: The longest message whose header is read (bytes): a node's own queue may hold anything.
MAX_MESSAGE = 16 * 2**20


def first_sent_of(raw: Any) -> float | None:
    """The :data:`SENT_HEADER` of a message as kombu's Redis transport stores it (JSON);
    None when it has none that reads as a time (a message sent by other means)."""
    if not raw:
        return None
    if len(raw) > MAX_MESSAGE:
        return None
    try:
        value = json.loads(raw)["headers"][SENT_HEADER]
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def oldest_waiting(
    client: redis.Redis, queues: Iterable[str]
) -> tuple[dict[str, float], list[str]]:
    """For each of ``queues`` that holds a message, when the oldest one waiting was first
    sent (its :data:`SENT_HEADER`), in one round trip; and the queues whose key is not a
    list (a node's own queue it made something else: that costs its node alone, never the
    other queues'). A queue that is empty, or whose oldest message does not say, is left
    out."""
    names = sorted(set(queues))
    if not names:
        return {}, []
    try:
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.lindex(name, -1)
        heads = pipe.execute(raise_on_error=False)
    except redis.RedisError as exc:
        raise store_errors(exc) from exc
    wrong = refused_keys(names, heads)
    out: dict[str, float] = {}
    for name, raw in zip(names, heads, strict=True):
        stamp = None if isinstance(raw, Exception) else first_sent_of(raw)
        if stamp is not None:
            out[name] = stamp
    return out, wrong
