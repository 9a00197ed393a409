"""A real redis-server on a free loopback port, started once per test session (fixtures)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from pipeline.store import Keys, Store


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed; `make test` installs it with apt-get")
    port = free_port()
    workdir: Path = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    client.close()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def store(redis_url: str) -> Iterator[Store]:
    """A store with a prefix of its own, so tests never see each other's keys."""
    client = redis.Redis.from_url(redis_url)
    yield Store(client, Keys(f"test-{uuid.uuid4().hex[:8]}"))
    client.close()
