"""A node worker told to stop (SIGTERM, as systemd stops it) leaves even when its Redis
accepts connections and never answers: its warm shutdown would wait for ever to close the
broker connection, so once no task runs it waits ``STOP_GRACE_S`` more and exits, saying
why. Before, it was still alive 600 s later."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pipeline.platform.supervision import STOP_GRACE_S
from tests import silent_server

silent = silent_server.silent  # the fixture


def test_it_leaves_once_idle_past_the_grace(
    tmp_path: Path, silent: tuple[int, list[socket.socket]]
) -> None:
    port, held = silent
    env = {**os.environ, "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://127.0.0.1:{port}/0"}
    argv = ["node-worker", "--hostname", "compute01", "--backend", "systemd", "--nic", "none"]
    log = tmp_path / "node-worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", *argv, "--state-dir", str(tmp_path)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # its consumer connected (after its stop handlers were installed) and waits
        while not held:
            assert worker.poll() is None, log.read_text()
            time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=STOP_GRACE_S + 120) == 0, log.read_text()
    finally:
        worker.kill()
    assert "leaving now" in log.read_text()
