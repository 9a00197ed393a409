"""``python -m benchmarks.lifecycle``: jobs through the whole lifecycle, zero-latency DWS.

Everything real but DWS's work: simulated Flux → hooks → Celery worker →
API server → DWS controller (latency 0, playing the clientmount daemon; its
own process) → watcher (its own process) → observe tasks → outbox → Flux.
Two phases, because one closed loop cannot show both figures:

* **throughput** — ``--jobs`` jobs that run for no time, at most
  ``--in-flight`` at once: the pipeline is the only thing any job waits
  for, so it runs flat out. Prints jobs/s, tasks per job, the transition
  latency under that saturation, and our task rate as a fraction of the
  bare Celery ceiling (no-op tasks, same worker, same run: the median of
  three measurements before the phase and three after, each of 1,000
  tasks; the ratio to the best of the six, which errs low, is printed too).
* **responsiveness** — ``--in-flight`` jobs kept in flight: each runs for
  ``--runtime`` seconds and new ones arrive at the rate that keeps that
  many live (Little's law: in-flight ÷ runtime per second), as on a busy
  machine. Prints transition latency p50/p99 (DWS shows a state ready →
  our next patch) — the figure flux-coral2's 5 s poll is compared with.
  In the saturated phase, by contrast, latency is just the queue: with
  every job waiting on us, it is in-flight ÷ transition rate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from coral2_sim.demo.metrics import (
    STATES,
    TransitionClock,
    leaks,
    percentile,
)
from coral2_sim.heap import FrozenHeap
from coral2_sim.system import SimulatedSystem

from benchmarks.lifecycle_probes import (
    Ceiling,
    RssTrace,
    bucket_percentiles,
    counted,
    task_count,
)
from pipeline.model.rabbitmap import RabbitMapping

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
    ceiling_tasks_per_s: float  # the median of the samples
    leaks: list[str]
    ceiling_samples: list[float] = field(default_factory=list)
    live_jobs: int = 0
    live_transitions: int = 0
    live_p50_ms: float = 0.0
    live_p99_ms: float = 0.0
    live_by_state: dict[str, tuple[int, float, float]] = field(default_factory=dict)  # n, p50, p99
    #: the pipeline's own view of the live phase (its transition histogram, every state):
    #: (count, the bucket bound p50 falls under, the one p99 falls under), in ms
    live_histogram: tuple[int, float, float] = (0, 0.0, 0.0)
    worker_threads: tuple[int, int] = (0, 0)  # after warm-up, at the end
    worker_rss_mib: tuple[float, float] = (0.0, 0.0)
    #: live phase, while at least 90 % of --in-flight were live: first, last, highest
    steady_rss_mib: tuple[float, float, float] = (0.0, 0.0, 0.0)
    cpu_ms_per_job: dict[str, float] = field(default_factory=dict)  # saturated phase
    cores_busy: float = 0.0  # saturated phase: CPU seconds per second of wall time
    ceiling_cpu_ms_per_task: dict[str, float] = field(default_factory=dict)  # no-op samples

    @property
    def ratio(self) -> float:
        """Our jobs/s over the ceiling's jobs/s (ceiling tasks/s ÷ tasks per job)."""
        if not self.tasks_per_job:
            return 0.0
        return self.jobs_per_s / (self.ceiling_tasks_per_s / self.tasks_per_job)

    @property
    def ratio_to_best(self) -> float:
        """The same against the best ceiling sample: a bound that errs low."""
        if not self.tasks_per_job or not self.ceiling_samples:
            return 0.0
        return self.jobs_per_s / (max(self.ceiling_samples) / self.tasks_per_job)


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


#: How often the live jobs are counted (s): a count holds the simulated Flux's lock.
LOOK_S = 0.25


def _run(
    system: SimulatedSystem, jobs: int, in_flight: int, directive: str, runtime_s: float
) -> tuple[list[int], float, tuple[float, float]]:
    """Submit ``jobs``, keeping at most ``in_flight`` live; with ``runtime_s`` > 0, no faster
    than ``in_flight / runtime_s`` per second. Return (ids, wall s, steady window): the
    monotonic times from the first to the last moment ≥ 90 % of ``in_flight`` were live."""
    assert system.flux is not None
    flux = system.flux
    ids: list[int] = []
    live: list[int] = []  # submitted, not yet INACTIVE: a pass costs the live jobs only
    interval = runtime_s / in_flight if runtime_s > 0 else 0.0
    start = next_at = time.perf_counter()
    first = last = 0.0
    looked = 0.0
    while len(ids) < jobs or live:
        if time.monotonic() - looked >= LOOK_S:  # thousands live: not at every pass
            with flux.lock:
                live = [j for j in live if flux.jobs[j].state != "INACTIVE"]
            looked = time.monotonic()
        if len(live) >= 0.9 * in_flight:
            last = time.monotonic()
            first = first or last
        for _ in range(min(in_flight - len(live), jobs - len(ids))):
            if time.perf_counter() < next_at:
                break
            ids.append(flux.submit(RESOURCES, system={"dw": directive}, runtime_s=runtime_s))
            live.append(ids[-1])
            next_at += interval
        time.sleep(0.02)  # a pass holds the simulated Flux's lock: not more often than this
    return ids, time.perf_counter() - start, (first, last)


def bench_lifecycle(
    jobs: int = 500,
    in_flight: int = 200,
    dw: str | None = None,
    concurrency: int = 4,
    *,
    runtime_s: float = 60.0,
    live_jobs: int | None = None,
    workers: int = 1,
    pool: str = "threads",
    rabbits: int = 16,
    appendfsync: str = "everysec",
) -> LifecycleFigures:
    """Both phases (module docstring); ``live_jobs`` (default ``2 * in_flight``, 0 to skip)
    jobs of ``runtime_s`` seconds in the responsiveness phase."""
    directive = dw or "#DW jobdw type=xfs capacity=10GiB name=scratch"
    live_jobs = 2 * in_flight if live_jobs is None else live_jobs
    with (
        SimulatedSystem(
            mapping(rabbits),
            latency_s=0.0,
            observe_only=False,
            with_flux=True,
            prefix="bench",
            worker_concurrency=concurrency,
            workers=workers,
            worker_pool=pool,
            appendfsync=appendfsync,
        ) as system,
        FrozenHeap(),
    ):  # the simulated Flux and the clock: no collector's pause
        assert system.flux is not None and system.kube is not None
        flux = system.flux
        ceiling = Ceiling()
        ceiling.measure(system)
        threads_before, rss_before = system.footprint("worker")
        clock = TransitionClock(system.kube.api()).start()
        before = task_count(system)
        cpu_before = system.cpu_seconds()
        ids, elapsed, _ = _run(system, jobs, in_flight, directive, 0.0)
        cpu_used = {
            name: seconds - cpu_before.get(name, 0.0)
            for name, seconds in system.cpu_seconds().items()
        }
        tasks = task_count(system) - before
        if tasks <= 0:
            raise RuntimeError(f"the workers counted {tasks} task runs for {jobs} jobs")
        clock.stop()
        samples = clock.all_samples()
        ceiling.measure(system)
        live_ids: list[int] = []
        live: list[float] = []
        steady_rss = (0.0, 0.0, 0.0)
        histogram = (0, 0.0, 0.0)
        by_state: dict[str, list[float]] = {}
        if live_jobs:
            live_clock = TransitionClock(system.kube.api()).start()
            histogram_before = counted(system)
            with RssTrace(system) as rss:
                live_ids, _, (since, until) = _run(
                    system, live_jobs, in_flight, directive, runtime_s
                )
            steady_rss = rss.within(since, until)
            histogram = bucket_percentiles(counted(system), histogram_before)
            live_clock.stop()
            for at, ms, state in live_clock.timeline:
                if since <= at <= until:
                    live.append(ms)
                    by_state.setdefault(state, []).append(ms)
        failed = [j for j in ids + live_ids if flux.jobs[j].result != "COMPLETED"]
        settle = time.monotonic() + 15
        while leaks(system) and time.monotonic() < settle:
            time.sleep(0.1)
        found = leaks(system) + [f"job {j} {flux.jobs[j].result}" for j in failed]
        threads_after, rss_after = system.footprint("worker")
    return LifecycleFigures(
        jobs=jobs,
        jobs_per_s=jobs / elapsed,
        tasks_per_job=tasks / jobs if jobs else 0.0,
        p50_ms=percentile(samples, 50),
        p99_ms=percentile(samples, 99),
        ceiling_tasks_per_s=statistics.median(ceiling.samples),
        ceiling_samples=ceiling.samples,
        ceiling_cpu_ms_per_task=ceiling.cpu_ms_per_task(),
        leaks=found,
        live_jobs=live_jobs,
        live_transitions=len(live),
        live_p50_ms=percentile(live, 50),
        live_p99_ms=percentile(live, 99),
        live_by_state={
            state: (len(v), percentile(v, 50), percentile(v, 99)) for state, v in by_state.items()
        },
        worker_threads=(threads_before, threads_after),
        worker_rss_mib=(rss_before, rss_after),
        steady_rss_mib=steady_rss,
        live_histogram=histogram,
        cpu_ms_per_job={name: 1000 * used / max(jobs, 1) for name, used in cpu_used.items()},
        cores_busy=sum(cpu_used.values()) / elapsed if elapsed > 0 else 0.0,
    )


#: What a phase that did not run shows instead of its figures (a 0 would read as one).
SKIPPED = "(no saturated phase)"
LIVE_SKIPPED = "(no live phase)"


def describe(f: LifecycleFigures) -> dict[str, Any]:
    ran, live = bool(f.jobs), bool(f.live_jobs)
    return {
        "jobs": f.jobs,
        "jobs_per_s": round(f.jobs_per_s, 1) if ran else SKIPPED,
        "tasks_per_job": round(f.tasks_per_job, 1) if ran else SKIPPED,
        "saturated_transition_p50_ms": round(f.p50_ms, 1) if ran else SKIPPED,
        "saturated_transition_p99_ms": round(f.p99_ms, 1) if ran else SKIPPED,
        "celery_ceiling_tasks_per_s": round(f.ceiling_tasks_per_s),
        "celery_ceiling_samples": " ".join(f"{c:.0f}" for c in f.ceiling_samples),
        "throughput_vs_ceiling": round(f.ratio, 2) if ran else SKIPPED,
        "throughput_vs_best_ceiling": round(f.ratio_to_best, 2) if ran else SKIPPED,
        "live_jobs": f.live_jobs,
        "live_steady_transitions": f.live_transitions if live else LIVE_SKIPPED,
        "live_transition_p50_ms": round(f.live_p50_ms, 1) if live else LIVE_SKIPPED,
        "live_transition_p99_ms": round(f.live_p99_ms, 1) if live else LIVE_SKIPPED,
        "live_by_state_n_p50_p99": state_line(f) if live else LIVE_SKIPPED,
        "live_pipeline_histogram": (
            "{} transitions, p50 ≤ {:g} ms, p99 ≤ {:g} ms".format(*f.live_histogram)
            if live
            else LIVE_SKIPPED
        ),
        "worker_threads": "{} → {}".format(*f.worker_threads),
        "worker_rss_mib": "{:.0f} → {:.0f}".format(*f.worker_rss_mib),
        "worker_rss_mib_steady": (
            "{:.0f} → {:.0f} (highest {:.0f})".format(*f.steady_rss_mib) if live else LIVE_SKIPPED
        ),
        "cpu_ms_per_job": cpu_line(f),
        "cpu_ms_per_task": task_cpu_line(f),
        "cores_busy": f"{f.cores_busy:.2f} of {os.cpu_count()}",
        "leaks": f.leaks,
    }


def state_line(f: LifecycleFigures) -> str:
    """``Setup 1200 4.1/12.0, DataIn …``: each state's steady transitions, p50/p99 (ms), in
    the order DWS goes through them, to tell one slow move from a slow pipeline."""
    order = [s for s in STATES if s in f.live_by_state]
    return ", ".join(
        "{} {} {:.1f}/{:.1f}".format(state, *f.live_by_state[state]) for state in order
    )


def cpu_line(f: LifecycleFigures) -> str:
    """``worker 40, kube-api 23, … (total 92)``: where each saturated job's CPU went."""
    if not f.jobs:
        return SKIPPED
    spent = sorted(f.cpu_ms_per_job.items(), key=lambda item: -item[1])
    parts = [f"{name} {ms:.0f}" for name, ms in spent if ms >= 0.5]
    return ", ".join(parts) + f" (total {sum(f.cpu_ms_per_job.values()):.0f})"


def task_cpu_line(f: LifecycleFigures) -> str:
    """``lifecycle 9.5 (workers 4.1), no-op 4.2 (workers 2.3)``: the CPU of one task of the
    saturated phase against one of the ceiling's no-op tasks, all processes together. The
    two are measured in the same run, so their ratio shows how much heavier a lifecycle
    task is, whatever the VM's speed at the time."""
    if not f.jobs or not f.tasks_per_job or not f.ceiling_cpu_ms_per_task:
        return SKIPPED
    ours = {name: ms / f.tasks_per_job for name, ms in f.cpu_ms_per_job.items()}
    noop = f.ceiling_cpu_ms_per_task

    def workers(spent: dict[str, float]) -> float:  # "worker", "worker-2", …
        return sum(ms for name, ms in spent.items() if name.startswith("worker"))

    return (
        f"lifecycle {sum(ours.values()):.1f} (workers {workers(ours):.1f}), "
        f"no-op {sum(noop.values()):.1f} (workers {workers(noop):.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lifecycle")
    parser.add_argument("--jobs", type=int, default=500, help="saturated phase (0: skip)")
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--runtime", type=float, default=60.0, help="s per job, live phase")
    parser.add_argument("--live-jobs", type=int, help="jobs in the live phase (0: skip)")
    parser.add_argument("--workers", type=int, default=1, help="Celery worker processes")
    parser.add_argument("--pool", default="threads", help="their pool: threads or prefork")
    # threads per worker: 4 beat 8 on 2 cores (fewer threads contending for the worker's
    # interpreter lock; docs/lifecycle.md "Performance" has the runs)
    parser.add_argument("--concurrency", type=int, default=4, help="per worker process")
    parser.add_argument(
        "--computes",
        type=int,
        default=256,
        help="simulated computes, 16 a rabbit (a job takes one: at least --in-flight)",
    )
    args = parser.parse_args()
    figures = bench_lifecycle(
        args.jobs,
        args.in_flight,
        concurrency=args.concurrency,
        runtime_s=args.runtime,
        live_jobs=args.live_jobs,
        workers=args.workers,
        pool=args.pool,
        rabbits=-(-args.computes // 16),
    )
    for key, value in describe(figures).items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
