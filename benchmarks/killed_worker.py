"""A worker SIGKILLed with jobs in flight: how much later its jobs end than their siblings.

Two lifecycle workers, ``resend_after`` at its default (120 s); a batch of ``#DW`` jobs is
submitted at once and the first worker is killed (not restarted) as soon as one of them
runs. The messages it took come back as soon as ``housekeeping.redeliver`` finds its
heartbeat stopped (``pipeline.store.workers``), not ``resend_after`` later. Printed: each
job's submit-to-inactive time against the same batch run first without a kill: how much
later the slowest job in flight at the kill ended than its siblings' median (target: 15 s
or less).

``python -m benchmarks.killed_worker [--jobs N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

from coral2_sim.demo.model import sample_path
from coral2_sim.system import SimulatedSystem

from pipeline.model.rabbitmap import RabbitMapping

DW = "#DW jobdw type=xfs capacity=8GiB name=scratch"
TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}


def bench_killed_worker(jobs: int = 8) -> dict[str, float]:
    """Run the batch, kill a worker; the figures in seconds."""
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    with SimulatedSystem(
        mapping,
        observe_only=False,
        with_flux=True,
        node_workers=True,
        workers=2,
        config=str(sample_path("sample-cluster.toml")),
        latency_s=0.001,
    ) as system:
        assert system.flux is not None
        baseline = _batch(system, jobs, kill=False)
        ended = _batch(system, jobs, kill=True)
    took = sorted(ended.values())
    sibling = statistics.median(baseline.values()) if baseline else float("nan")
    slowest = took[-1] if took else float("nan")
    return {
        "jobs": float(jobs),
        "ended": float(len(took)),
        "sibling_s": sibling,
        "slowest_s": slowest,
        "later_s": slowest - sibling,
    }


def _batch(system: SimulatedSystem, jobs: int, *, kill: bool) -> dict[int, float]:
    """Submit ``jobs`` at once (with ``kill``: SIGKILL the first worker once one runs);
    each job's submit-to-inactive time."""
    assert system.flux is not None
    flux = system.flux
    resources = [{"type": "node", "count": 2, "with": [TASK]}]
    start = {}
    for _ in range(jobs):
        jobid = flux.submit(resources, system={"dw": DW}, runtime_s=1.0)
        start[jobid] = time.monotonic()
    if kill:
        while not any(flux.job(j).state in ("RUN", "CLEANUP") for j in start):
            time.sleep(0.01)
        system.kill("worker")
    ended: dict[int, float] = {}
    deadline = time.monotonic() + 600
    while len(ended) < len(start) and time.monotonic() < deadline:
        for jobid, began in start.items():
            if jobid not in ended and flux.job(jobid).state == "INACTIVE":
                ended[jobid] = time.monotonic() - began
        time.sleep(0.05)
    return ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8)
    figures = bench_killed_worker(parser.parse_args().jobs)
    print(
        f"killed worker: {figures['ended']:.0f} of {figures['jobs']:.0f} jobs in flight ended; "
        f"the same batch without a kill: median {figures['sibling_s']:.1f} s; with the kill: "
        f"slowest {figures['slowest_s']:.1f} s, {figures['later_s']:.1f} s later "
        "(target ≤ 15 s)"
    )


if __name__ == "__main__":
    main()
