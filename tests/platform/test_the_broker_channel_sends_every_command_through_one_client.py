"""The broker channel sends every command through one Redis client (pipeline/platform/broker.py),
and messages still wait in kombu's unacked index until they are acknowledged."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kombu import Connection

from pipeline.platform.broker import RedisTransport, SentinelTransport
from tests.sentinel import sentinel_cluster

__all__ = ["sentinel_cluster"]  # the fixture


@pytest.fixture
def connection(redis_url: str) -> Iterator[Connection]:
    with Connection(redis_url, transport=RedisTransport) as conn:
        yield conn


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client of the same Redis, to look at kombu's unacked hash."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def round_trip(conn: Connection, raw: redis.Redis) -> None:
    """Put one message, take it, and check it is unacked until acknowledged."""
    queue = conn.SimpleQueue(f"broker-test-{uuid.uuid4().hex[:8]}")
    try:
        queue.put({"n": 1})
        message: Any = queue.get(timeout=10)
        assert message.payload == {"n": 1}
        assert raw.hexists("unacked", message.delivery_tag)
        message.ack()
        assert not raw.hexists("unacked", message.delivery_tag)
    finally:
        queue.close()


def test_every_command_of_a_channel_goes_through_the_same_client(
    connection: Connection,
) -> None:
    channel: Any = connection.default_channel
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second
        assert first.connection_pool is channel.pool


def test_a_message_stays_unacked_until_acknowledged(
    connection: Connection, raw: redis.Redis
) -> None:
    round_trip(connection, raw)


def test_a_channel_that_drops_its_pool_builds_a_client_for_the_new_one(
    connection: Connection, raw: redis.Redis
) -> None:
    channel: Any = connection.default_channel
    with channel.conn_or_acquire() as before:
        pass
    channel._disconnect_pools()  # what kombu does on a lost connection or after a fork
    with channel.conn_or_acquire() as after:
        assert after is not before
        assert after.connection_pool is channel.pool
    round_trip(connection, raw)


def test_a_client_the_caller_gives_is_used_as_given(
    connection: Connection, raw: redis.Redis
) -> None:
    channel: Any = connection.default_channel
    with channel.conn_or_acquire(raw) as used:
        assert used is raw


def test_a_sentinel_channel_shares_one_client_of_the_master(
    sentinel_cluster: tuple[int, subprocess.Popen[bytes], int],
) -> None:
    sentinel_port, _, _ = sentinel_cluster
    with Connection(
        f"sentinel://127.0.0.1:{sentinel_port}",
        transport=SentinelTransport,
        transport_options={"master_name": "coral2"},
    ) as conn:
        channel: Any = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
        sentinel = redis.Sentinel([("127.0.0.1", sentinel_port)])
        master_host, master_port = sentinel.discover_master("coral2")
        sentinel.close()
        raw = redis.Redis(host=master_host, port=master_port)
        round_trip(conn, raw)
        raw.close()
