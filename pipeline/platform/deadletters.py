"""Setting a message aside (:mod:`pipeline.model.deadletter`), from any process.

The writers are the broker channel (a message that is not a kombu message),
the Celery consumer (one Celery cannot decode or run) and the bridge (an
outbox entry it cannot deliver). Each logs the dead letter once, as a
warning naming where it came from and why, and never raises: a Redis that
cannot take the dead letter is logged too, and the caller drops the message
all the same, so one bad message cannot stop a worker.
"""

from __future__ import annotations

import logging
from typing import Any

from pipeline.model.deadletter import KEEP, DeadLetter, count_key, list_key

log = logging.getLogger("coral2_pipeline.deadletters")


def set_aside(client: Any, prefix: str | None, where: str, raw: bytes | str, reason: str) -> None:
    """Push the dead letter with ``client`` (a redis client) under ``prefix``'s keys."""
    letter = DeadLetter.of(where, raw, reason)
    log.warning("set aside a bad message from %s (%d bytes): %s", where, letter.size, letter.reason)
    if prefix is None or client is None:
        return
    try:
        pipe = client.pipeline(transaction=True)
        pipe.lpush(list_key(prefix), letter.model_dump_json())
        pipe.ltrim(list_key(prefix), 0, KEEP - 1)
        pipe.incr(count_key(prefix))
        pipe.execute()
    except Exception as exc:  # the message is dropped anyway; say that it was not kept
        log.error("could not keep the dead letter from %s in Redis: %s", where, exc)
