"""flux-coral2 #466: an admin deletes the ``fluxjob-*`` Workflows by hand, hundreds at
once, while their jobs are anywhere in their lives. Every job still ends, each one whose
Workflow vanished with an exception that says so, and nothing is left behind: no record,
lock, deadline, ledger entry, outbox backlog, allocated node or Rabbit object."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.demo.metrics import leaks
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, start_system

JOBS = 60


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system()
    yield sim
    sim.stop()


def delete_workflows_while_jobs_live(
    system: SimulatedSystem, jobids: list[int], enough: int
) -> int:
    """What ``kubectl delete workflows --all`` does, again and again, until it has deleted
    ``enough`` Workflows or every job has ended, however slowly the jobs move."""
    assert system.dws is not None and system.flux is not None
    deleted = 0
    while deleted < enough and any(system.flux.job(j).state != "INACTIVE" for j in jobids):
        items, _ = system.dws.list_objects("workflows")
        for item in items:
            if item["metadata"]["name"].startswith("fluxjob-"):
                deleted += system.dws.delete_workflow(item["metadata"]["name"])
        time.sleep(0.2)
    return deleted


def test_every_job_ends_and_nothing_is_left(system: SimulatedSystem) -> None:
    assert system.flux is not None
    dw = "#DW jobdw type=xfs capacity=10GiB name=scratch"
    jobids = [
        system.flux.submit(nodes(1), runtime_s=0.5 + (i % 5) * 0.3, system={"dw": dw})
        for i in range(JOBS)
    ]
    assert delete_workflows_while_jobs_live(system, jobids, enough=JOBS // 3) > 0
    assert system.flux.wait_inactive(jobids, 180), leaks(system)
    results = {system.flux.job(j).result for j in jobids}
    assert results <= {"COMPLETED", "FAILED"}
    for jobid in jobids:
        job = system.flux.job(jobid)
        if job.result == "FAILED":
            assert any("fluxjob-" in e["note"] for e in job.exceptions), job.exceptions
    deadline = time.monotonic() + 30
    while (left := leaks(system)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []
