"""With a sentinel:// URL the store follows a Redis failover: records survive, writes resume."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from pipeline.errors import StoreUnavailable
from pipeline.store import JobRecord, Store
from tests.redis_server import free_port


def start(args: list[str], workdir: Path, name: str) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    assert binary is not None
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen([binary, *args], stdout=log, stderr=subprocess.STDOUT, cwd=workdir)


def wait_ping(port: int) -> None:
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            assert time.monotonic() < deadline, f"redis on {port} did not start"
            time.sleep(0.05)


@pytest.fixture
def sentinel_cluster(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes], int]]:
    master_port, replica_port, sentinel_port = free_port(), free_port(), free_port()
    common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    master = start(["--port", str(master_port), *common], tmp_path, "master")
    replica = start(
        ["--port", str(replica_port), *common, "--replicaof", "127.0.0.1", str(master_port)],
        tmp_path,
        "replica",
    )
    conf = tmp_path / "sentinel.conf"
    conf.write_text(
        f"port {sentinel_port}\nbind 127.0.0.1\ndir {tmp_path}\n"
        f"sentinel monitor coral2 127.0.0.1 {master_port} 1\n"
        "sentinel down-after-milliseconds coral2 500\n"
        "sentinel failover-timeout coral2 2000\n"
    )
    sentinel = start([str(conf), "--sentinel"], tmp_path, "sentinel")
    procs = [master, replica, sentinel]
    try:
        for port in (master_port, replica_port, sentinel_port):
            wait_ping(port)
        yield sentinel_port, master, replica_port
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(timeout=10)


def retry(action, timeout_s: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except StoreUnavailable:
            assert time.monotonic() < deadline, "the store never recovered"
            time.sleep(0.2)


def test_records_survive_a_failover_and_writes_resume(
    sentinel_cluster: tuple[int, subprocess.Popen[bytes], int],
) -> None:
    sentinel_port, master, replica_port = sentinel_cluster
    store = Store.from_url(f"sentinel://127.0.0.1:{sentinel_port}/coral2", "ha")
    assert store.jobs.create(JobRecord(jobid=1, hosts=["c1"]))
    replica = redis.Redis(port=replica_port)
    deadline = time.monotonic() + 20
    while replica.get("ha:job:1") is None:
        assert time.monotonic() < deadline, "the replica never caught up"
        time.sleep(0.05)
    sentinel = redis.Redis(port=sentinel_port, decode_responses=True)
    deadline = time.monotonic() + 30
    while not any(  # the sentinel learns replicas from the master's INFO (every few seconds)
        r.get("flags") == "slave" and r.get("master-link-status") == "ok"
        for r in sentinel.sentinel_slaves("coral2")
    ):
        assert time.monotonic() < deadline, "the sentinel never discovered the replica"
        time.sleep(0.1)
    master.kill()
    master.wait()
    record = retry(
        lambda: store.jobs.update(1, lambda r: r.model_copy(update={"state": "after-failover"}))
    )
    assert record is not None
    assert (record.hosts, record.state) == (["c1"], "after-failover")
    assert replica.info("replication")["role"] == "master"
