"""Start the real services a benchmark needs: a redis-server on a free port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis


def free_port() -> int:
    """Return a free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    """Run a throw-away redis-server; yield its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("benchmarks need redis-server (make bench installs it)")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
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
                tmp,
            ],
            stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        try:
            yield url
        finally:
            client.close()
            proc.terminate()
            proc.wait(timeout=10)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` percentile (0 to 100) of ``values`` (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]
