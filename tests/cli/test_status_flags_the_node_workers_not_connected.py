"""`coral2-pipeline status` knows which node workers are up without a heartbeat of
theirs: each names its Redis connections for its nodes, and status reads CLIENT LIST.
A compute of the mapping with no node worker connected is a WARNING naming it, and the
flag clears once its node worker is back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.children import die_with_parent

from pipeline.model.rabbitmap import RabbitMapping
from tests.cli.status_helpers import Status

TiB = 2**40


@pytest.fixture
def site(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    """A mapping of c1 and c2 with CXI services on, status aimed at it; starts node
    workers."""
    mapping = RabbitMapping.build({"rabbit1": (TiB, ["c1", "c2"])})
    (tmp_path / "mapping.json").write_text(mapping.model_dump_json())
    env = {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": f"nw-{uuid.uuid4().hex[:6]}",
        "CORAL2_PIPELINE_RABBIT__MAPPING": str(tmp_path / "mapping.json"),
        "CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE": "true",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    started: list[subprocess.Popen[bytes]] = []

    def start(host: str) -> subprocess.Popen[bytes]:
        child = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        argv = [sys.executable, "-m", "pipeline.cli", "node-worker", "--hostname", host]
        argv += ["--backend", "systemd", "--nic", "simulated", "--state-dir", str(tmp_path)]
        with (tmp_path / f"{host}.log").open("wb") as log:
            proc = subprocess.Popen(
                die_with_parent(argv), env={**child, **env}, stdout=log, stderr=log
            )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=60)


def silent_flags(status: Status) -> list[str]:
    _, out, err = status("--json")
    assert err == "", err
    return [f for f in json.loads(out)["flags"] if "node workers are not connected" in f]


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_node_without_its_node_worker_is_named_until_it_connects(
    site: Callable[[str], subprocess.Popen[bytes]], status: Status, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert silent_flags(status) == [
        "2 of 2 node workers are not connected to Redis (c[1-2]): jobs on those nodes wait "
        "for their prologs; is coral2-pipeline-node-worker running there?"
    ]
    site("c1")
    until(
        lambda: any(c.get("name") == "coral2-node-worker:c1" for c in client.client_list()),
        "c1's node worker never connected",
    )
    [flag] = silent_flags(status)
    assert flag.startswith("1 of 2 node workers are not connected to Redis (c2)")
    site("c2")
    until(lambda: silent_flags(status) == [], "the flag did not clear once c2 connected")
    client.close()
