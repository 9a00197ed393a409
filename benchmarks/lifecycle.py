"""``python -m benchmarks.lifecycle``: N jobs through the whole lifecycle, zero-latency DWS.

Everything real but DWS's work: simulated Flux → hooks → Celery worker →
API server → DWS controller (latency 0, playing the clientmount daemon) →
watcher → observe tasks → outbox → Flux. Prints jobs/s, tasks per job,
transition latency p50/p99 (DWS shows a state ready → our next patch) with
``--in-flight`` jobs at once, and our throughput as a fraction of the bare
Celery ceiling measured on the same worker in the same run.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from pipeline.demo_metrics import TransitionClock, leaks, percentile
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.sim.system import SimulatedSystem

TiB = 2**40
RESOURCES = [
    {
        "type": "node",
        "count": 1,
        "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
    }
]


@dataclass
class LifecycleFigures:
    jobs: int
    jobs_per_s: float
    tasks_per_job: float
    p50_ms: float
    p99_ms: float
    ceiling_tasks_per_s: float
    leaks: list[str]

    @property
    def ratio(self) -> float:
        """Our jobs/s over the ceiling's jobs/s (ceiling tasks/s ÷ tasks per job)."""
        return self.jobs_per_s / (self.ceiling_tasks_per_s / self.tasks_per_job)


def mapping(rabbits: int = 16, per_rabbit: int = 16) -> RabbitMapping:
    return RabbitMapping.build(
        {
            f"rabbit{r + 1}": (
                64 * TiB,
                [f"node{r * per_rabbit + i + 1:04d}" for i in range(per_rabbit)],
            )
            for r in range(rabbits)
        }
    )


def _task_count(system: SimulatedSystem) -> int:
    assert system.store is not None
    return sum(1 for _ in system.store.client.scan_iter(f"{system.prefix}:attempts:*", count=1000))


def _ceiling(system: SimulatedSystem, tasks: int) -> float:
    assert system.app is not None
    ping = "housekeeping.ping"
    system.app.send_task(ping, args=["warm"]).get(timeout=60)
    start = time.perf_counter()
    results = [system.app.send_task(ping, args=[str(i)]) for i in range(tasks)]
    for result in results:
        result.get(timeout=120)
    return tasks / (time.perf_counter() - start)


def bench_lifecycle(
    jobs: int = 500, in_flight: int = 200, dw: str | None = None, concurrency: int = 8
) -> LifecycleFigures:
    """Run ``jobs`` xfs jobs, at most ``in_flight`` at once."""
    directive = dw or "#DW jobdw type=xfs capacity=10GiB name=scratch"
    with SimulatedSystem(
        mapping(),
        latency_s=0.0,
        observe_only=False,
        with_flux=True,
        prefix="bench",
        worker_concurrency=concurrency,
    ) as system:
        assert system.flux is not None and system.kube is not None
        flux = system.flux
        clock = TransitionClock(system.kube.url).start()
        before = _task_count(system)
        ids: list[int] = []
        start = time.perf_counter()
        while len(ids) < jobs or any(flux.jobs[j].state != "INACTIVE" for j in ids):
            with flux.lock:
                active = sum(flux.jobs[j].state != "INACTIVE" for j in ids)
            for _ in range(min(in_flight - active, jobs - len(ids))):
                ids.append(flux.submit(RESOURCES, system={"dw": directive}, runtime_s=0.0))
            time.sleep(0.005)
        elapsed = time.perf_counter() - start
        tasks = _task_count(system) - before
        clock.stop()
        failed = [j for j in ids if flux.jobs[j].result != "COMPLETED"]
        samples = clock.all_samples()
        ceiling = _ceiling(system, 1000)
        settle = time.monotonic() + 15
        while leaks(system) and time.monotonic() < settle:
            time.sleep(0.1)
        found = leaks(system) + [f"job {j} {flux.jobs[j].result}" for j in failed]
    return LifecycleFigures(
        jobs=jobs,
        jobs_per_s=jobs / elapsed,
        tasks_per_job=tasks / jobs,
        p50_ms=percentile(samples, 50),
        p99_ms=percentile(samples, 99),
        ceiling_tasks_per_s=ceiling,
        leaks=found,
    )


def describe(f: LifecycleFigures) -> dict[str, Any]:
    return {
        "jobs": f.jobs,
        "jobs_per_s": round(f.jobs_per_s, 1),
        "tasks_per_job": round(f.tasks_per_job, 1),
        "transition_p50_ms": round(f.p50_ms, 1),
        "transition_p99_ms": round(f.p99_ms, 1),
        "celery_ceiling_tasks_per_s": round(f.ceiling_tasks_per_s),
        "throughput_vs_ceiling": round(f.ratio, 2),
        "leaks": f.leaks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lifecycle")
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--in-flight", type=int, default=200)
    args = parser.parse_args()
    for key, value in describe(bench_lifecycle(args.jobs, args.in_flight)).items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
