"""Two beats run; one holds the beat lease and ticks. Frozen (SIGSTOP), it loses the lease
once it expires and the standby takes over; woken up again, it stays a standby. A lease
key someone set by hand without an expiry is taken over too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from pipeline.store import Keys
from pipeline.store.lease import Lease

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def keys() -> Keys:
    return Keys(f"beat-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def beats(
    redis_url: str, keys: Keys, tmp_path: Path
) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = keys.prefix
    env["CORAL2_PIPELINE_PIPELINE__BEAT_LEASE"] = "1.5"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"] = f"{keys.prefix}-l"  # nobody reads
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__TIMEOUTS"] = f"{keys.prefix}-t"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING"] = f"{keys.prefix}-h"
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        n = len(started)
        argv = [sys.executable, "-m", "celery", "-A", "pipeline.app", "beat"]
        argv += ["-s", str(tmp_path / f"schedule-{n}"), "--loglevel=WARNING"]
        with (tmp_path / f"beat-{n}.log").open("wb") as log:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
    for proc in started:
        proc.wait(timeout=30)


def holder(client: redis.Redis, keys: Keys) -> str | None:
    return Lease(client, keys.beat_leader).holder()


def wait_for(predicate: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def pid_of(name: str | None) -> int:
    assert name is not None
    return int(name.split(":")[1])


def test_a_frozen_beat_gives_way_and_stays_a_standby_when_it_wakes(
    beats: Callable[[], subprocess.Popen[bytes]], redis_url: str, keys: Keys
) -> None:
    client = redis.Redis.from_url(redis_url)
    first = beats()
    wait_for(lambda: holder(client, keys) is not None)
    assert pid_of(holder(client, keys)) == first.pid
    second = beats()
    time.sleep(3)  # the standby is up and trying
    assert pid_of(holder(client, keys)) == first.pid
    first.send_signal(signal.SIGSTOP)
    wait_for(
        lambda: holder(client, keys) is not None and pid_of(holder(client, keys)) == second.pid
    )
    tick = client.get(keys.beat_tick)
    assert tick is not None and str(second.pid) in tick.decode()
    first.send_signal(signal.SIGCONT)
    time.sleep(3)
    assert pid_of(holder(client, keys)) == second.pid


def test_a_lease_key_without_expiry_is_taken_over(
    beats: Callable[[], subprocess.Popen[bytes]], redis_url: str, keys: Keys
) -> None:
    client = redis.Redis.from_url(redis_url)
    client.set(keys.beat_leader, "someone:1:bogus")  # no expiry
    beat = beats()
    wait_for(lambda: pid_of(holder(client, keys)) == beat.pid if holder(client, keys) else False)
