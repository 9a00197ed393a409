"""Two beats run; one holds the beat lease and ticks. Frozen (SIGSTOP), it loses the lease
once it expires and the standby takes over; woken up again, it stays a standby. A lease
key someone set by hand without an expiry is taken over too."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable

import redis

from pipeline.store import Keys
from pipeline.store.lease import Lease


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
