"""``coral2-pipeline status`` follows the Nagios plugin conventions beyond its exit codes:
its first line ends with performance data after ``|`` (what the report counts, for a
graph), and ``-t S`` bounds it — a Redis that accepts and never answers gives UNKNOWN
with one line once S seconds have passed, not the store's socket timeout later."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from pipeline.store import OutboxMessage, Store
from tests import silent_server
from tests.cli.status_helpers import Status

silent = silent_server.silent  # the fixture


def test_its_first_line_carries_the_counts_as_performance_data(
    status: Status, aimed: Store
) -> None:
    aimed.client.set(aimed.keys.watcher_leader, "watcher-a", px=60_000)
    aimed.client.set(aimed.keys.beat_tick, f"{time.time()} beat-a")
    aimed.outbox.append(OutboxMessage(kind="memo", jobid=7, payload={"id": 7, "memo": {}}))
    _, out, _ = status()
    verdict, _, figures = out.splitlines()[0].partition(" | ")
    assert verdict.split(":")[0] in ("OK", "WARNING", "CRITICAL")
    data = dict(f.split("=", 1) for f in figures.split())
    assert data["outbox"] == "1;;;0"
    assert data["tracked_jobs"] == "0;;;0"
    assert data["outbox_oldest"].endswith("s;;;0")
    assert {"sent_tasks", "deadlines", "failures", "dead_letters", "locks_held"} <= set(data)


def test_a_silent_redis_is_unknown_once_its_timeout_passed(
    silent: tuple[int, list[socket.socket]],
) -> None:
    port, held = silent
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")},
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://127.0.0.1:{port}/0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "status", "-t", "1"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert held, "status never reached the silent server"
    assert done.returncode == 3, (done.stdout, done.stderr)
    # its own bound ended it: the store's socket timeout would have said "Timeout reading"
    assert done.stdout.splitlines() == [
        "UNKNOWN: no verdict in 1 s (-t): Redis or the report took longer"
    ]
