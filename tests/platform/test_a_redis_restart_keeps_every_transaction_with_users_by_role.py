"""Redis run with the users of ``coral2-pipeline redis-acl`` and an append-only file gives
back, after a restart, every write a role made — those made in a MULTI/EXEC
transaction too (the job store writes most of its changes so). Redis replays the file
as its ``default`` user and re-checks each ``EXEC`` against that user's rules; with the
user switched off, every transaction of the file was silently dropped."""

from __future__ import annotations

import secrets
from pathlib import Path

import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings


def test_a_transaction_of_the_management_user_survives_a_restart(tmp_path: Path) -> None:
    password = secrets.token_urlsafe(16)
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"})
    aclfile = tmp_path / "users.acl"
    aclfile.write_text(acl_file(settings, {"management": password}))
    login = ("management", password)
    server = RedisServer(
        tmp_path, aof=True, log=tmp_path / "redis.log", aclfile=aclfile, login=login
    )
    with server:
        with redis.Redis(port=server.port, username="management", password=password) as client:
            with client.pipeline(transaction=True) as pipe:
                pipe.set("coral2:job:1", "{}")
                pipe.rpush("coral2:outbox:1", "entry")
                pipe.execute()
            client.set("coral2:job:2", "{}")
        server.stop()
        server.start()
        with redis.Redis(port=server.port, username="management", password=password) as client:
            assert client.get("coral2:job:1") == b"{}"
            assert client.lrange("coral2:outbox:1", 0, -1) == [b"entry"]
            assert client.get("coral2:job:2") == b"{}"
    assert server.aof_refusals() == []
