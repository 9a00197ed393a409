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
from collections.abc import Callable
from typing import Any

from pipeline.model.deadletter import KEEP, MAX_RAW, DeadLetter, count_key, list_key

#: The ``task`` of an answers-stream entry that is a node's dead letter, not an answer.
NODE_DEAD_LETTER = "node.dead_letter"

log = logging.getLogger("coral2_pipeline.deadletters")


#: In a node worker: where a dead letter from a queue goes instead (its node's answers
#: stream, the one key the node may write), by the queue's name (:func:`to_node_streams`).
_node_stream: dict[str, Callable[[str], str]] = {}


def to_node_streams(stream_of: Callable[[str], str] | None) -> None:
    """This process is a node worker: its dead letters go onto the answers stream
    ``stream_of(where)`` names, for the management side to keep (None: back to the list)."""
    _node_stream.clear()
    if stream_of is not None:
        _node_stream["of"] = stream_of


def set_aside(client: Any, prefix: str | None, where: str, raw: bytes | str, reason: str) -> None:
    """Push the dead letter with ``client`` (a redis client) under ``prefix``'s keys."""
    letter = DeadLetter.of(where, raw, reason)
    log.warning("set aside a bad message from %s (%d bytes): %s", where, letter.size, letter.reason)
    if prefix is None or client is None:
        return
    if _node_stream:
        try:  # a node may only add: the reader moves it among the dead letters
            data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
            entry = {
                "task": NODE_DEAD_LETTER,
                "where": where,
                "raw": bytes(data[:MAX_RAW]),
                "size": str(letter.size),
                "reason": letter.reason,
            }
            client.xadd(_node_stream["of"](where), entry)
        except Exception as exc:  # the message is dropped anyway; say that it was not kept
            log.error("could not keep the dead letter from %s in Redis: %s", where, exc)
        return
    try:
        pipe = client.pipeline(transaction=True)
        pipe.lpush(list_key(prefix), letter.model_dump_json())
        pipe.ltrim(list_key(prefix), 0, KEEP - 1)
        pipe.incr(count_key(prefix))
        pipe.execute()
    except Exception as exc:  # the message is dropped anyway; say that it was not kept
        log.error("could not keep the dead letter from %s in Redis: %s", where, exc)
