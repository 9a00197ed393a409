"""``flux-prolog``, waiting for a job's verdict, stops on Ctrl-C (SIGINT): one line saying
it was interrupted and exit 130, as a shell expects; the job's wait is Flux's to give up,
so nothing is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of its own: the blocking read the test waits for can be this prolog's
    alone (on the session's, another test's waiting prolog would do, and the signal could
    come before this one waits)."""
    with RedisServer(tmp_path) as server:
        yield server.url


def test_a_waiting_prolog_interrupted_says_so_and_exits_130(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")},
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "ctrlc",
    }
    prolog = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "flux-prolog", "--jobid", "4242"],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while not any(c.get("cmd") == "blpop" for c in client.client_list()):  # it waits
            assert prolog.poll() is None, prolog.stderr.read() if prolog.stderr else ""
            time.sleep(0.05)
        before = client.dbsize()
        prolog.send_signal(signal.SIGINT)
        _, err = prolog.communicate(timeout=120)
    finally:
        prolog.kill()
    assert prolog.returncode == 130, err
    assert err.strip().splitlines() == ["coral2-pipeline flux-prolog: interrupted"]
    assert client.dbsize() == before
