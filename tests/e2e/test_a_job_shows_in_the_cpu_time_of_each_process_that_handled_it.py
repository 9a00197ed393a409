"""The simulated system accounts the CPU time of each of its processes (the benchmark's
``cpu_ms_per_job``): a DW job shows in every process that handles one."""

from __future__ import annotations

from pipeline.sim.system import SimulatedSystem
from tests.e2e.conftest import run


def test_a_dw_job_adds_cpu_time_to_every_process_that_handles_it(
    system: SimulatedSystem,
) -> None:
    before = system.cpu_seconds()
    job = run(system, "#DW jobdw type=xfs capacity=10GiB name=scratch")
    after = system.cpu_seconds()
    assert job.result == "COMPLETED", job.exceptions
    handlers = {"worker", "watcher", "kube-api", "node-worker", "redis", "this process"}
    assert handlers <= set(after), sorted(after)
    for name in handlers:
        assert after[name] > before[name], name
