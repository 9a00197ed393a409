"""The simulated system accounts the CPU time of each of its processes (the benchmark's
``cpu_ms_per_job``): DW jobs show in every process that handles them."""

from __future__ import annotations

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run

HANDLERS = {"worker", "watcher", "kube-api", "node-worker", "redis", "this process"}


def test_dw_jobs_add_cpu_time_to_every_process_that_handles_them(
    system: SimulatedSystem,
) -> None:
    # /proc counts CPU in clock ticks (10 ms): one job may leave a light process, Redis
    # say, within the same tick, so jobs run until every handler has moved (at most 8)
    before = system.cpu_seconds()
    idle = set(HANDLERS)
    for _ in range(8):
        job = run(system, "#DW jobdw type=xfs capacity=10GiB name=scratch")
        assert job.result == "COMPLETED", job.exceptions
        after = system.cpu_seconds()
        assert set(after) >= HANDLERS, sorted(after)
        idle = {name for name in HANDLERS if after[name] <= before[name]}
        if not idle:
            break
    assert idle == set()
