"""Every benchmark runs once at its smallest size and prints its figures, so none can break
unseen (the health benchmark's storm had called a store method renamed since, and failed
before printing anything). Each asserts only that its figures are printed, never a time.
The lifecycle and durability ones start a whole simulated system and take minutes even
small, and the killed-worker, node-connection and Redis-scale ones 10 to 30 s each: those
five run in ``make test-all``, keeping ``make test`` within its 12 minutes; the exporter's
and the fan-out's have files of their own."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

SLOW = pytest.mark.redundant

CASES = [
    ("startup", [], r"flux-prolog: \d+ ms, [\d.]+x the baseline"),
    ("elcap", ["--computes", "16", "--repeat", "1"], r"dws2jgf, 16 computes: [\d.]+ s"),
    (
        "health",
        ["--events", "1000", "--rabbits", "4", "--flaps", "1"],
        r"storm of 4 rabbits flapping, \d+ Storage events: [\d.]+ outbox entries per event",
    ),
    ("hwcoll", ["--jobs", "4", "--outage", "1"], r"4 eligible jobs, .* reservations left: \d+"),
    ("vnipool", ["--clients", "2", "--seconds", "0.5"], r"reserve\(2\)\+release pairs: \d+/s"),
    pytest.param(
        "redis_scale",
        ["--jobs", "4", "--in-flight", "2", "--hold", "2"],
        r"memory per job in flight: -?[\d.]+ KiB",  # two jobs: within Redis's noise, even below 0
        marks=SLOW,
    ),
    ("trust", ["--nodes", "16", "--issue", "2"], r"verify and decode one node answer: \d+ µs"),
    pytest.param(
        "nodeconn",
        ["--idle", "1", "--jobs", "2"],
        r"idle \d+ connections, [\d.]+ commands/s",
        marks=SLOW,
    ),
    pytest.param(
        "killed_worker",
        ["--jobs", "1"],
        r"killed worker: \d+ of 1 jobs in flight ended",
        marks=SLOW,
    ),
    pytest.param(
        "lifecycle",
        ["--jobs", "4", "--in-flight", "2", "--runtime", "1", "--live-jobs", "2"],
        r"cpu_ms_per_task\s+lifecycle [\d.]+",
        marks=SLOW,
    ),
    pytest.param(
        "durability",
        ["--jobs", "4", "--in-flight", "2", "--live-jobs", "2", "--runtime", "1"],
        r"appendfsync always: [\d.]+ jobs/s saturated",
        marks=SLOW,
    ),
]


@pytest.mark.parametrize(("module", "args", "figures"), CASES)
def test_it_prints_its_figures(module: str, args: list[str], figures: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(figures, done.stdout), (figures, done.stdout[-3000:])
