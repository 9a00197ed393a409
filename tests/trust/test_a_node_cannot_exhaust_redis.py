"""Redis as deploy/redis/coral2-pipeline.conf runs it cannot be exhausted by a node: a
flood of answers appended with compute63's user ends with Redis's clear refusal (``OOM
command not allowed when used memory > 'maxmemory'``), with nothing evicted — every job
record is still there — and the server still answers: the management side reads, and
deletes the flood; one answer larger than any the pipeline sends is refused outright;
``status`` names the pressure."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file, node_user
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "redis" / "coral2-pipeline.conf"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    work = tmp_path_factory.mktemp("flood")
    aclfile = work / "users.acl"
    nodes = {node_user("compute63"): (["compute63"], "node-password")}
    aclfile.write_text(
        acl_file(load_settings(env={}), {"management": "mgmt-password"}, nodes=nodes)
    )
    login = ("management", "mgmt-password")
    with RedisServer(work, aclfile=aclfile, login=login, maxmemory="48mb", config=CONF) as redis_:
        yield redis_


def client(server: RedisServer, user: str, password: str) -> redis.Redis:
    return redis.Redis(port=server.port, username=user, password=password)


def test_a_flood_of_answers_ends_with_a_clear_refusal_and_loses_nothing(
    server: RedisServer,
) -> None:
    management = client(server, "management", "mgmt-password")
    attacker = client(server, node_user("compute63"), "node-password")
    for jobid in range(100):
        management.set(f"coral2:job:{jobid}", "{}")
    with pytest.raises(
        redis.exceptions.OutOfMemoryError, match="command not allowed when used memory"
    ):
        for _ in range(10_000):  # far more than maxmemory holds
            attacker.xadd("coral2:answers:compute63", {"body": b"x" * 1024 * 1024})
    info = management.info("memory")
    assert info["maxmemory_policy"] == "noeviction"
    assert all(management.exists(f"coral2:job:{jobid}") for jobid in range(100))
    assert management.xlen("coral2:answers:compute63") > 0 and management.ping()
    status = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "status"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")},
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url.replace(
                "redis://", "redis://management:mgmt-password@"
            ),
            "COLUMNS": "300",
        },
    )
    assert "of its 48 MiB maxmemory" in status.stdout, status.stdout + status.stderr
    management.delete("coral2:answers:compute63")
    assert attacker.xadd("coral2:answers:compute63", {"task": "job.prolog_done"})


def test_one_answer_larger_than_any_the_pipeline_sends_is_refused(server: RedisServer) -> None:
    attacker = client(server, node_user("compute63"), "node-password")
    with pytest.raises(redis.exceptions.RedisError):
        attacker.xadd("coral2:answers:compute63", {"body": b"x" * (9 * 1024 * 1024)})
    assert attacker.ping()
