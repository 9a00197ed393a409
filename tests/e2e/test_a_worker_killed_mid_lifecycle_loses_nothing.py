"""SIGKILL the Celery worker while jobs are in flight: a new one carries on, nothing twice."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, rpcs, start_system


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    # a short resend_after, so the messages the dead worker took are sent again soon
    sim = start_system(extra_env={"CORAL2_PIPELINE_PIPELINE__RESEND_AFTER": "5"})
    yield sim
    sim.stop()


def test_jobs_in_flight_finish_after_the_worker_is_killed_and_restarted(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    flux = system.flux
    xfs = "#DW jobdw type=xfs capacity=8GiB name=scratch"
    gfs2 = "#DW jobdw type=gfs2 capacity=8GiB name=shared"
    # one lustre job: nnf gives a rabbit one Lustre MGT, and these jobs share rabbit1
    lustre = "#DW jobdw type=lustre capacity=50GiB name=lus"
    dws = [xfs, gfs2, lustre, xfs, gfs2, xfs]
    ids = [flux.submit(nodes(2), system={"dw": dw}, runtime_s=0.5) for dw in dws]
    deadline = time.monotonic() + 30
    while not any(flux.job(j).state in ("RUN", "CLEANUP") for j in ids):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    system.kill("worker")
    time.sleep(1.0)
    system.restart("worker")
    stuck = [
        (j, flux.job(j).state, [e.name for e in flux.job(j).eventlog[-4:]])
        for j in ids
        if not flux.wait_inactive([j], 120)
    ]
    assert stuck == []
    for jobid in ids:
        assert flux.job(jobid).result == "COMPLETED", flux.job(jobid).exceptions
    time.sleep(1.0)
    for jobid in ids:
        for once in ("resource-update", "prolog-remove", "epilog-remove"):
            assert len(rpcs(system, f"job-manager.dws.{once}", jobid)) == 1, (jobid, once)
