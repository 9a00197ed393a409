"""The demo's Redis runs with an append-only file, as production's does: stopped and
started again on the same port and directory, it has every write back."""

from __future__ import annotations

from pathlib import Path

import redis
from coral2_sim.redis_server import RedisServer


def test_a_graceful_restart_loses_nothing(tmp_path: Path) -> None:
    server = RedisServer(tmp_path, aof=True).start()
    try:
        client = redis.Redis.from_url(server.url)
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        client.rpush("queue", *[f"message-{n}" for n in range(1000)])
        client.hset("record", mapping={"state": "PreRun", "version": "7"})
        client.close()
        server.stop()
        server.start()
        client = redis.Redis.from_url(server.url)
        assert client.llen("queue") == 1000
        assert client.hgetall("record") == {b"state": b"PreRun", b"version": b"7"}
        client.close()
    finally:
        server.stop()
