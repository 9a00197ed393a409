"""``slingshot clean`` (and ``env``), which send a node task and await its result, say in
one line that Redis could not be reached — exit 4, as every command does — where the
send through Celery's result store used to end in a traceback of 127 lines; a Redis that
accepts and never answers is the same line once the store's socket timeout passed (kombu's
publish would retry it for minutes)."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests import silent_server
from tests.redis_server import free_port

silent = silent_server.silent  # the fixture


def clean(port: int) -> subprocess.CompletedProcess[str]:
    """``slingshot clean compute01`` with the Redis at ``port`` of the loopback."""
    env = {
        "PATH": "/usr/bin:/bin",
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://127.0.0.1:{port}/0",
    }
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "slingshot", "clean", "compute01"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_a_refused_redis_is_one_line_and_exit_4() -> None:
    done = clean(free_port())
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline slingshot: Redis unavailable: ")


def test_a_redis_that_never_answers_is_one_line_and_exit_4_within_its_timeout(
    silent: tuple[int, list[socket.socket]],
) -> None:
    port, held = silent
    done = clean(port)
    assert held, "the command never reached the silent server"
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.strip().splitlines()
    # the store's socket timeout ended it, not kombu's publish retries (past 100 s)
    said = "coral2-pipeline slingshot: Redis unavailable: Timeout reading from 127.0.0.1"
    assert line == f"{said}:{port}"
