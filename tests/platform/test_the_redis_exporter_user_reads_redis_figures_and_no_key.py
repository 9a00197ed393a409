"""The ``redis-exporter`` user (for Prometheus's redis_exporter) reads what that exporter
reads — INFO, the slow log, latency, CLIENT LIST — and no key, and changes nothing; nor
may it read Redis's settings, among which are the replication and login passwords
(``CONFIG GET masterauth``): redis_exporter runs with ``--config-command=-``."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings


def test_it_reads_the_servers_figures_and_nothing_else(tmp_path: Path) -> None:
    settings = load_settings(env={})
    passwords = {"management": "m-pw", "redis-exporter": "x-pw"}
    aclfile = tmp_path / "users.acl"
    aclfile.write_text(acl_file(settings, passwords))
    with RedisServer(tmp_path, aclfile=aclfile, login=("management", "m-pw")) as server:
        exporter = redis.Redis(port=server.port, username="redis-exporter", password="x-pw")
        assert "used_memory" in exporter.info()
        assert "maxmemory" in exporter.info("memory")  # what CONFIG GET would have told
        assert "maxclients" in exporter.info("clients")
        exporter.slowlog_get()
        exporter.execute_command("LATENCY", "LATEST")
        exporter.client_list()
        for call in (
            lambda: exporter.get("coral2:job:1"),
            lambda: exporter.set("x", "1"),
            lambda: exporter.config_set("maxmemory", "1mb"),
            lambda: exporter.config_get("masterauth"),
            lambda: exporter.config_get("requirepass"),
            lambda: exporter.config_get("*"),
            lambda: exporter.keys("*"),
        ):
            with pytest.raises(redis.exceptions.NoPermissionError):
                call()
        exporter.close()
