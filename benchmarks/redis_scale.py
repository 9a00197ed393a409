"""Redis at whole-machine scale: the commands a job costs Redis, by kind, and the memory a
job in flight holds — measured on the simulated system (xfs jobs on one node each, the
lifecycle benchmark's set-up) — and the totals they give for 5,000 jobs in flight on
11,136 nodes.

* **commands per job**: ``INFO commandstats`` before and after ``--jobs`` jobs run
  through (at most ``--in-flight`` at once), divided by the jobs, once the system's
  start (every rabbit's ssds told to Flux) is behind it; the Celery traffic (queues,
  results) included.
* **memory per job in flight**: ``used_memory`` once ``--hold`` jobs are all running
  (each runs ``--runtime`` s, long enough to be measured in RUN), less before, divided
  by the jobs.

``python -m benchmarks.redis_scale [--jobs 200] [--hold 200]``
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

import redis
from coral2_sim.system import SimulatedSystem

from benchmarks.lifecycle import RESOURCES, _run, mapping
from pipeline.store.keys import Keys

#: El Capitan's compute nodes, and the jobs in flight the target names.
NODES = 11_136
IN_FLIGHT = 5_000
#: What one node worker holds at the broker (its blocking read and its idle connection),
#: measured with 2,000 such pairs (docs/performance.md, "One node worker at the broker").
NODE_WORKER_KIB = 66
DIRECTIVE = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def _commands(client: redis.Redis) -> Counter[str]:
    stats: dict[str, Any] = client.info("commandstats")
    return Counter({k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()})


def _used(client: redis.Redis) -> int:
    info: dict[str, Any] = client.info("memory")
    return int(info["used_memory"])


def _settled(client: redis.Redis, keys: Keys, rabbits: int, timeout_s: float = 120) -> None:
    """Wait until the system's start is behind it: every rabbit's ssds told to Flux (once,
    at start: one message per ssd) and the outbox empty, so that no job pays for it."""
    deadline = time.monotonic() + timeout_s
    while client.hlen(keys.rabbits_told) < rabbits or client.xlen(keys.outbox):
        if time.monotonic() > deadline:
            raise RuntimeError("the simulated system did not settle after its start")
        time.sleep(0.2)


def bench_redis_scale(jobs: int = 200, in_flight: int = 100, hold: int = 200) -> dict[str, Any]:
    """Commands per job by kind, bytes per job in flight, and the whole-machine totals."""
    with SimulatedSystem(
        mapping(), latency_s=0.0, observe_only=False, with_flux=True, prefix="bench"
    ) as system:
        assert system.flux is not None and system.redis is not None
        assert system.store is not None
        client = redis.Redis.from_url(system.redis_url)
        _settled(client, system.store.keys, len(system.mapping.rabbits))
        before = _commands(client)
        _run(system, jobs, in_flight, DIRECTIVE, 0.0)
        per_job = {
            name: (n - before.get(name, 0)) / jobs
            for name, n in _commands(client).items()
            if n > before.get(name, 0)
        }
        time.sleep(2)  # the last Workflows deleted, their keys gone
        idle = _used(client)
        flux = system.flux
        ids = [flux.submit(RESOURCES, system={"dw": DIRECTIVE}, runtime_s=600) for _ in range(hold)]
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with flux.lock:
                running = sum(1 for j in ids if flux.jobs[j].state == "RUN")
            if running == hold:
                break
            time.sleep(0.5)
        time.sleep(2)  # their observes settled
        held = _used(client) - idle
        for jobid in ids:
            flux.cancel(jobid)
        client.close()
    bytes_per_job = held / hold
    return {
        "commands_per_job": dict(sorted(per_job.items(), key=lambda kv: -kv[1])),
        "total_per_job": sum(per_job.values()),
        "bytes_per_job": bytes_per_job,
        "running": running,
        "hold": hold,
        "in_flight_mib": bytes_per_job * IN_FLIGHT / 2**20,
        "node_workers_mib": NODE_WORKER_KIB * NODES / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--hold", type=int, default=200)
    args = parser.parse_args()
    r = bench_redis_scale(args.jobs, args.in_flight, args.hold)
    top = ", ".join(f"{k} {v:.1f}" for k, v in list(r["commands_per_job"].items())[:12])
    print(f"commands per job: {r['total_per_job']:.0f} ({top}, …)")
    print(
        f"memory per job in flight: {r['bytes_per_job'] / 1024:.1f} KiB "
        f"({r['running']} of {r['hold']} held in RUN)"
    )
    print(
        f"{IN_FLIGHT:,} jobs in flight: {r['in_flight_mib']:.0f} MiB; node workers of "
        f"{NODES:,} computes: {r['node_workers_mib']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
