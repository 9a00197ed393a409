"""`coral2-pipeline status` knows which node workers run by their heartbeats: a compute of
the mapping whose node worker has not beaten is flagged by name; the flag clears once it
beats, comes back at once when it stops, and within three beats when it is killed
outright (its heartbeat left to expire)."""

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
        # a beat a second: a killed worker is seen within three
        "CORAL2_PIPELINE_PIPELINE__NODE_HEARTBEAT": "1",
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
    return [f for f in json.loads(out)["flags"] if "node workers are not running" in f]


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_node_without_its_node_worker_is_named_until_it_beats_and_after_it_stops(
    site: Callable[[str], subprocess.Popen[bytes]], status: Status, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    prefix = os.environ["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"]
    assert silent_flags(status) == [
        "2 of 2 node workers are not running (no heartbeat from c[1-2]): jobs on those "
        "nodes wait for their prologs; is coral2-pipeline-node-worker running there?"
    ]
    c1 = site("c1")
    until(lambda: bool(client.exists(f"{prefix}:node-alive:c1")), "c1 never beat")
    [flag] = silent_flags(status)
    assert flag.startswith("1 of 2 node workers are not running (no heartbeat from c2)")
    c2 = site("c2")
    until(lambda: silent_flags(status) == [], "the flag did not clear once c2 beat")
    c1.terminate()  # a worker told to stop takes its heartbeat away as it goes
    c1.wait(timeout=60)
    [flag] = silent_flags(status)
    assert flag.startswith("1 of 2 node workers are not running (no heartbeat from c1)")
    c2.kill()  # killed outright: its heartbeat expires three beats after the last
    until(
        lambda: any("(no heartbeat from c[1-2])" in f for f in silent_flags(status)),
        "c2's heartbeat never expired",
    )
    client.close()
