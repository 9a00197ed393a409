"""A beat whose host clock steps back an hour goes on sending the deadline sweep every
second: Celery's schedules count from each entry's last run, which now lies in the
future, and the leader scheduler brings those runs back to now."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from coral2_sim.clock import SteppingClock, compiler

from pipeline.store import Keys

pytestmark = pytest.mark.skipif(
    compiler() is None, reason="the stepping clock needs a C compiler (cc)"
)


def sweeps(client: redis.Redis, keys: Keys) -> int:
    return int(client.llen(f"{keys.prefix}-t"))  # the timeouts queue nobody reads


def more_sweeps(client: redis.Redis, keys: Keys, than: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while sweeps(client, keys) <= than:
        assert time.monotonic() < deadline, f"no sweep sent past {than} in {timeout_s} s"
        time.sleep(0.1)


def test_the_sweep_goes_on_after_an_hours_step_back(
    beats: Callable[..., subprocess.Popen[bytes]], redis_url: str, keys: Keys, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(redis_url)
    clock = SteppingClock(tmp_path / "clock")
    beats(clock.env())
    more_sweeps(client, keys, than=2)  # leading and sweeping every second
    clock.step(-3600.0)
    time.sleep(1.5)  # the next sweep falls due on the stepped clock
    before = sweeps(client, keys)
    more_sweeps(client, keys, than=before + 2)
