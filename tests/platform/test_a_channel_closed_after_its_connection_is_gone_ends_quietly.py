"""Redis restarts while the worker runs tasks: Celery's consumer closes its connection, and
the channel, closing, tries to put its unacknowledged messages back — after the
transport dropped its client. That must end as a connection error, which kombu ignores
while closing (the messages wait in Redis's unacked hash to be restored), not as an
AttributeError that stops the worker ("Unrecoverable error")."""

from __future__ import annotations

import uuid
from typing import Any

from kombu import Connection

from pipeline.platform.broker import RedisTransport


def test_closing_restores_nothing_and_raises_nothing_kombu_does_not_ignore(
    redis_url: str,
) -> None:
    with Connection(redis_url, transport=RedisTransport) as conn:
        queue = conn.SimpleQueue(f"gone-{uuid.uuid4().hex[:8]}")
        queue.put({"n": 1})
        message: Any = queue.get(timeout=10)  # delivered, not acknowledged
        channel = message.channel
        channel._pool = None  # as after kombu's _disconnect_pools
        conn.transport.client = None  # as after the transport was closed
        conn.maybe_close_channel(channel)  # ignores connection errors, raises the rest
        assert channel.closed
