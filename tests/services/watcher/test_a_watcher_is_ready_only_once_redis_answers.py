"""The watcher tells systemd it is ready only once Redis answers, and pings the watchdog
only while it does: a watcher that cannot reach Redis watches nothing, so it stays
"activating" with why in its status line, says so once in its log, and turns ready as
soon as Redis answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from coral2_sim.kube.api import KubeApiServer
from coral2_sim.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[3]


def messages(sock: socket.socket, seconds: float) -> list[str]:
    """What the process told systemd within ``seconds``."""
    out: list[str] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            out += sock.recv(4096).decode().splitlines()
        except TimeoutError:
            break
    return out


def test_ready_comes_once_redis_answers_and_not_before(
    kube_api: KubeApiServer, tmp_path: Path
) -> None:
    (tmp_path / "redis").mkdir()
    redis_server = RedisServer(tmp_path / "redis")  # made, not started: Redis is down
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    env = {
        **os.environ,
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_server.url,
        "CORAL2_PIPELINE_PIPELINE__API_HOST": kube_api.url,
        "NOTIFY_SOCKET": str(tmp_path / "notify"),
        "WATCHDOG_USEC": "2000000",
    }
    env.pop("CORAL2_PIPELINE_CONFIG", None)
    log = tmp_path / "watch.log"
    with log.open("w") as out, subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "watch", "--lease", "1"],
        env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
    ) as proc:  # fmt: skip
        try:
            before: list[str] = []
            deadline = time.monotonic() + 60  # however slowly the process starts
            while not any(m.startswith("STATUS=waiting for Redis") for m in before):
                assert time.monotonic() < deadline, (before, log.read_text())
                before += messages(notify, 1.0)
            before += messages(notify, 3.0)  # and it stays waiting
            assert "READY=1" not in before and "WATCHDOG=1" not in before, before
            assert log.read_text().count("Redis does not answer") == 1, log.read_text()
            redis_server.start()
            after: list[str] = []
            deadline = time.monotonic() + 30
            while "WATCHDOG=1" not in after:
                assert time.monotonic() < deadline, (after, log.read_text())
                after += messages(notify, 1.0)
            assert "READY=1" in after
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
            redis_server.stop()
            notify.close()
