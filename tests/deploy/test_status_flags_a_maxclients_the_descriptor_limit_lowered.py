"""Redis lowers ``maxclients`` to its file-descriptor limit less 32 and says so only in its
log (``maxclients 50000`` became 19,968 under a 20,000 limit). ``status`` reads the
limit Redis really has and flags one too small for the node workers of the computes it
knows, naming the fix; the shipped unit drop-in leaves room for the shipped maxclients."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import redis
from coral2_sim.demo.model import sample_path
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "redis" / "coral2-pipeline.conf"
DROP_IN = ROOT / "deploy" / "redis" / "redis-server.service.d" / "coral2-pipeline.conf"


def shipped(key: str) -> int:
    lines = [line.split() for line in CONF.read_text().splitlines()]
    return int(next(words[1] for words in lines if words and words[0] == key))


def test_the_shipped_drop_in_leaves_room_for_the_shipped_maxclients() -> None:
    unit = configparser.ConfigParser()
    unit.read_string(DROP_IN.read_text())
    assert shipped("maxclients") + 32 <= int(unit["Service"]["LimitNOFILE"])


def test_status_flags_the_maxclients_redis_lowered(tmp_path: Path) -> None:
    aclfile = tmp_path / "users.acl"
    aclfile.write_text(acl_file(load_settings(env={}), {"monitoring": "watch-it"}))
    login = ("monitoring", "watch-it")
    # 600 descriptors: Redis keeps 568 clients of the 50,000 asked for
    with RedisServer(tmp_path, aclfile=aclfile, login=login, config=CONF, nofile=600) as server:
        info = redis.Redis(port=server.port, username="monitoring", password="watch-it")
        assert info.info("clients")["maxclients"] == 568
        status = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "status"],
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")},
                "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url.replace(
                    "redis://", "redis://monitoring:watch-it@"
                ),
                "CORAL2_PIPELINE_RABBIT__MAPPING": str(sample_path("sample-rabbitmapping.json")),
                "CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE": "true",
                "COLUMNS": "400",
            },
        )
    # the sample cluster's 64 computes at their cap of 4 and the management side need 756
    assert "Redis accepts at most 568 clients" in status.stdout, status.stdout + status.stderr
    assert "set maxclients 756 or more" in status.stdout
    assert status.returncode in (1, 2)  # WARNING (and CRITICAL: nothing else runs here)
