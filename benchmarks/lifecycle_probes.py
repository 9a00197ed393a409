"""The instruments ``benchmarks.lifecycle`` reads the system with: the workers' own task
counters, the bare Celery ceiling, the worker's resident memory over time, and the
pipeline's own transition histogram."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from coral2_sim.demo.metrics import PIPELINE_DRIVEN
from coral2_sim.system import SimulatedSystem


def task_count(system: SimulatedSystem) -> int:
    """Every task run the management workers counted since they started: each worker's
    own counters (``celery inspect stats``, its ``total``), asked over remote control with
    the management key. A worker that does not answer is an error, not a zero."""
    assert system.app is not None
    stats = system.app.control.inspect(timeout=30).stats() or {}
    if len(stats) < system.workers:
        raise RuntimeError(
            f"{system.workers - len(stats)} of {system.workers} workers did not answer "
            "inspect stats: the task count would be wrong"
        )
    return sum(sum(worker.get("total", {}).values()) for worker in stats.values())


def ceiling(system: SimulatedSystem, tasks: int) -> float:
    assert system.app is not None
    ping = "housekeeping.ping"
    system.app.send_task(ping, args=["warm"]).get(timeout=60)
    start = time.perf_counter()
    results = [system.app.send_task(ping, args=[str(i)]) for i in range(tasks)]
    for result in results:
        result.get(timeout=120)
    return tasks / (time.perf_counter() - start)


@dataclass
class Ceiling:
    """The no-op samples so far, and the CPU seconds each process spent on them."""

    samples: list[float] = field(default_factory=list)
    tasks: int = 0
    cpu_s: dict[str, float] = field(default_factory=dict)

    def measure(self, system: SimulatedSystem, samples: int = 3, tasks: int = 1000) -> None:
        """``samples`` ceiling measurements in a row. One lasts 2-4 s, and the VM's speed
        swings by a fifth within minutes (steal): one sample is noise, the median of
        several from both sides of the phase is the figure."""
        before = system.cpu_seconds()
        self.samples += [ceiling(system, tasks) for _ in range(samples)]
        for name, seconds in system.cpu_seconds().items():
            self.cpu_s[name] = self.cpu_s.get(name, 0.0) + seconds - before.get(name, 0.0)
        self.tasks += samples * (tasks + 1)  # and a warm-up ping each

    def cpu_ms_per_task(self) -> dict[str, float]:
        return {name: 1000 * s / max(self.tasks, 1) for name, s in self.cpu_s.items()}


class RssTrace:
    """The worker's resident memory every ``every_s`` seconds, with the monotonic time of
    each reading: memory that holds flat while the count in flight holds is a high-water
    mark, memory that climbs through it is kept objects."""

    def __init__(self, system: SimulatedSystem, every_s: float = 5.0) -> None:
        self.system, self.every_s = system, every_s
        self.readings: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-trace", daemon=True)

    def __enter__(self) -> RssTrace:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.readings.append((time.monotonic(), self.system.footprint("worker")[1]))

    def within(self, since: float, until: float) -> tuple[float, float, float]:
        """(first, last, highest) MiB read between ``since`` and ``until`` (zeros if none)."""
        mib = [m for at, m in self.readings if since <= at <= until]
        return (mib[0], mib[-1], max(mib)) if mib else (0.0, 0.0, 0.0)


def counted(system: SimulatedSystem) -> list[tuple[float, int]]:
    """The pipeline's transition histogram, the states the clock times (the pipeline's
    moves, not Proposal's wait for Flux or PreRun's for the job) summed: (bound s,
    cumulative)."""
    assert system.store is not None
    summed: dict[float, int] = {}
    for state, histogram in system.store.metrics.transitions().items():
        if state not in PIPELINE_DRIVEN:
            continue
        for bound, count in histogram.buckets:
            summed[bound] = summed.get(bound, 0) + count
    return sorted(summed.items())


def bucket_percentiles(
    after: list[tuple[float, int]], before: list[tuple[float, int]]
) -> tuple[int, float, float]:
    """(count, p50's bucket bound, p99's) in ms of the transitions counted in between: the
    worker's own measure, from DWS's ``readyChange`` to its patch (the exported
    ``coral2_transition_seconds``), beside the benchmark's clock."""
    earlier = dict(before)
    counts = [(bound, total - earlier.get(bound, 0)) for bound, total in after]
    total = counts[-1][1] if counts else 0

    def bound_of(q: float) -> float:
        return next((1000 * b for b, c in counts if c >= q / 100 * total), float("inf"))

    return total, bound_of(50), bound_of(99)
