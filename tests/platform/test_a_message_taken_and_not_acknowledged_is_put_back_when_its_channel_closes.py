"""With no unacked hash in Redis (the ledger is the one redelivery), a worker keeps the
messages it took in memory until it acknowledges them: a worker that stops puts back,
as it closes, what it took and did not run, so that another runs it at once, not after
the ledger's ``resend_after``. What it acknowledged stays gone."""

from __future__ import annotations

import uuid
from typing import Any

import redis
from kombu import Connection

from pipeline.platform.broker import RedisTransport
from pipeline.platform.config import celery_config
from pipeline.settings import load_settings


def test_closing_puts_back_the_unacknowledged_message_alone(redis_url: str) -> None:
    options = celery_config(load_settings(env={}))["broker_transport_options"]
    name = f"putback-{uuid.uuid4().hex[:8]}"
    with Connection(redis_url, transport=RedisTransport, transport_options=options) as conn:
        queue = conn.SimpleQueue(name)
        queue.put({"n": 1})
        queue.put({"n": 2})
        done: Any = queue.get(timeout=10)
        done.ack()
        taken: Any = queue.get(timeout=10)  # taken, never acknowledged
        server = redis.Redis.from_url(redis_url)
        assert server.llen(name) == 0  # both off the queue
        assert server.hget("unacked", taken.delivery_tag) is None  # kept in memory alone
        queue.close()
    with Connection(redis_url, transport=RedisTransport, transport_options=options) as conn:
        again: Any = conn.SimpleQueue(name).get(timeout=10)
        assert again.payload == taken.payload == {"n": 2}
        again.ack()
    assert redis.Redis.from_url(redis_url).llen(name) == 0
