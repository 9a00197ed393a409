"""``python -m benchmarks.durability``: the price of Redis's ``appendfsync always``.

``appendfsync everysec`` (as ``deploy/redis/coral2-pipeline.conf`` ships it) syncs the
append-only file once a second: a crash of Redis's host loses up to that second of
writes. ``always`` syncs before each write is answered: nothing answered is lost, at
one disk sync per write. The same lifecycle batch (:mod:`benchmarks.lifecycle`, its
saturated phase and its live phase) runs under each, one after the other, on this
machine's disk; printed: jobs/s saturated, and the transition p99 of both phases.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from benchmarks.lifecycle import bench_lifecycle

POLICIES = ("everysec", "always")


@dataclass(frozen=True)
class Durability:
    policy: str
    jobs_per_s: float
    p99_ms: float
    live_p99_ms: float


def bench_durability(
    jobs: int = 200, in_flight: int = 50, live_jobs: int = 100, runtime_s: float = 10.0
) -> list[Durability]:
    out = []
    for policy in POLICIES:
        f = bench_lifecycle(
            jobs, in_flight, live_jobs=live_jobs, runtime_s=runtime_s, appendfsync=policy
        )
        if f.leaks:
            raise RuntimeError(f"appendfsync {policy}: {f.leaks}")
        out.append(Durability(policy, f.jobs_per_s, f.p99_ms, f.live_p99_ms))
    return out


def line(d: Durability) -> str:
    return (
        f"appendfsync {d.policy}: {d.jobs_per_s:.1f} jobs/s saturated, transition p99 "
        f"{d.p99_ms:.0f} ms saturated, {d.live_p99_ms:.0f} ms live"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=50)
    parser.add_argument("--live-jobs", type=int, default=100)
    parser.add_argument("--runtime", type=float, default=10.0)
    args = parser.parse_args()
    for d in bench_durability(args.jobs, args.in_flight, args.live_jobs, args.runtime):
        print(line(d))


if __name__ == "__main__":
    main()
