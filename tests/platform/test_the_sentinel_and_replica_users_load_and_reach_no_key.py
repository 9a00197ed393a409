"""The ``sentinel`` and ``replica`` users of ``redis-acl`` load into a real Redis with the
commands Redis documents for Sentinel and for replication, and reach no key."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings


def test_each_loads_and_reaches_no_key(tmp_path: Path) -> None:
    passwords = {"management": "m-pw", "sentinel": "s-pw", "replica": "r-pw"}
    aclfile = tmp_path / "users.acl"
    aclfile.write_text(acl_file(load_settings(env={}), passwords))
    with RedisServer(tmp_path, aclfile=aclfile, login=("management", "m-pw")) as server:
        sentinel = redis.Redis(port=server.port, username="sentinel", password="s-pw")
        assert sentinel.ping()
        assert sentinel.execute_command("ROLE")[0] in (b"master", "master")
        assert "redis_version" in sentinel.info()
        replica = redis.Redis(port=server.port, username="replica", password="r-pw")
        assert replica.ping()
        for client in (sentinel, replica):
            for call in (lambda c=client: c.get("coral2:job:1"), lambda c=client: c.set("k", 1)):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    call()
            client.close()
