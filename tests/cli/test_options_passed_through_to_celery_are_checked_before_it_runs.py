"""The options after ``--`` of ``worker``, ``beat`` and ``flower`` are Celery's and
Tornado's to read, but a wrong one is one line naming it and exit 2, not their
traceback: a value not of its type, a missing value, a control character, a thread
count no worker should start (Celery would start 99,999,999 threads); a port Flower
cannot listen on is one line and exit 1. Each runs as the unit would, in a process of
its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

NEWLINE = "--hostname=a\nb"


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWER_BASIC_AUTH": "admin:secret"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--concurrency=abc"], "--concurrency 'abc': give a whole number of threads"),
        (["--concurrency=-1"], "--concurrency '-1'"),
        (["-c", "99999999"], "--concurrency '99999999'"),
        (["--loglevel=NOPE"], "celery worker: Invalid value for '-l' / '--loglevel'"),
        (["-Q"], "celery worker: Option '-Q' requires an argument."),
        (["--prefetch-multiplier=nan"], "'nan' is not a valid integer"),
        ([NEWLINE], "holds a control character"),
    ],
)
def test_a_wrong_worker_option_is_one_usage_line(options: list[str], says: str) -> None:
    done = run("worker", "--", *options)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline worker: ") and says in line


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--max_tasks=nan"], "celery flower: an option's value is not of its type"),
        (["--address=a\nb"], "holds a control character"),
    ],
)
def test_a_wrong_flower_option_is_one_usage_line(options: list[str], says: str) -> None:
    done = run("flower", "--", *options)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline flower: ") and says in line


def test_a_port_flower_cannot_listen_on_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("flower", "--", "--address=127.0.0.1", f"--port={port}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = [x for x in done.stderr.strip().splitlines() if "coral2-pipeline" in x]
    assert line == "coral2-pipeline flower: Flower cannot listen: Address already in use"
