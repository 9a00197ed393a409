"""A Redis master, its replica and one Sentinel watching them (master name ``coral2``)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.redis_server import free_port

__all__ = ["sentinel_cluster"]


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
