"""SIGKILL the watcher while jobs are in flight, start it again: every job still finishes."""

from __future__ import annotations

import time

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, rpcs


def test_jobs_finish_when_the_watcher_is_killed_mid_lifecycle(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    flux = system.flux
    dw = "#DW jobdw type=xfs capacity=8GiB name=scratch"
    ids = [flux.submit(nodes(2), system={"dw": dw}, runtime_s=0.3) for _ in range(4)]
    deadline = time.monotonic() + 30
    while not any(flux.job(j).memo.get("rabbits") for j in ids):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    system.kill("watcher")  # no resignation: its lease has to expire
    time.sleep(1.0)  # Workflows move on with nobody watching
    system.restart("watcher")
    system.wait_for_watcher()
    assert flux.wait_inactive(ids, 90), [flux.job(j).eventlog[-3:] for j in ids]
    for jobid in ids:
        assert flux.job(jobid).result == "COMPLETED", flux.job(jobid).exceptions
        for once in ("resource-update", "prolog-remove", "epilog-remove"):
            assert len(rpcs(system, f"job-manager.dws.{once}", jobid)) == 1, (jobid, once)
