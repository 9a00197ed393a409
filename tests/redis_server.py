"""A real redis-server on a free loopback port, started once per test session (fixtures)."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator

import pytest
import redis
from coral2_sim.redis_server import RedisServer, free_port

from pipeline.errors import ConfigError
from pipeline.store import Keys, Store

__all__ = ["free_port", "redis_url", "store"]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    except ConfigError as exc:
        pytest.fail(str(exc))
    yield server.url
    # a Celery result still subscribed unsubscribes when the garbage collector frees it:
    # let that happen now, while the server still answers, not in a __del__ after it is gone
    gc.collect()
    server.stop()


@pytest.fixture
def store(redis_url: str) -> Iterator[Store]:
    """A store with a prefix of its own, so tests never see each other's keys."""
    client = redis.Redis.from_url(redis_url)
    yield Store(client, Keys(f"test-{uuid.uuid4().hex[:8]}"))
    client.close()
