"""Redis restarts while the worker runs tasks: Celery's consumer closes its connection, and
the channel, closing, tries to put the messages it took and did not acknowledge back —
after the transport dropped its client. That must end as a connection error, which
kombu ignores while closing (the ledger sends those messages again), not as an
AttributeError that stops the worker ("Unrecoverable error")."""

from __future__ import annotations

import uuid
from typing import Any

from kombu import Connection

from pipeline.platform.broker import RedisTransport
from pipeline.platform.config import celery_config
from pipeline.settings import load_settings


def test_closing_restores_nothing_and_raises_nothing_kombu_does_not_ignore(
    redis_url: str,
) -> None:
    options = celery_config(load_settings(env={}))["broker_transport_options"]
    with Connection(redis_url, transport=RedisTransport, transport_options=options) as conn:
        queue = conn.SimpleQueue(f"gone-{uuid.uuid4().hex[:8]}")
        queue.put({"n": 1})
        message: Any = queue.get(timeout=10)  # delivered, not acknowledged
        channel = message.channel
        channel._pool = None  # as after kombu's _disconnect_pools
        conn.transport.client = None  # as after the transport was closed
        conn.maybe_close_channel(channel)  # ignores connection errors, raises the rest
        assert channel.closed
