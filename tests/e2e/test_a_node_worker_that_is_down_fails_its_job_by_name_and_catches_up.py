"""The node side at work: a job's prolog reaches every node through its queue with no
Kubernetes request from any node; a node worker that is down fails the job with an
exception naming it once ``node-timeout`` passes (brought due by the test, so that a busy
machine's slow answers are never taken for a down worker); the epilog work queued meanwhile runs
when it comes back."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.kube.sim_paths import REQUESTS_PATH
from coral2_sim.node.agent import USER_AGENT as CLIENTMOUNT_DAEMON
from coral2_sim.system import SimulatedSystem

from pipeline.model.job import DeadlineKind
from tests.e2e.conftest import bring_due, event_names, nodes, start_system

DW = "#DW jobdw type=xfs capacity=8GiB name=scratch"


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True, extra_env={"CORAL2_PIPELINE_PIPELINE__NODE_TIMEOUT": "3600"})
    yield sim
    sim.stop()


def requests_by_agent(system: SimulatedSystem) -> dict[str, int]:
    assert system.kube is not None
    counts: dict[str, int] = system.kube.sim(REQUESTS_PATH)
    return counts


def test_a_rabbit_jobs_node_work_costs_the_api_server_nothing_from_the_nodes(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    jobid = system.flux.submit(nodes(2), system={"dw": DW})
    assert system.flux.wait_inactive([jobid], 60)
    job = system.flux.job(jobid)
    assert job.result == "COMPLETED", event_names(job)
    names = event_names(job)
    assert names.index("prolog-finish job-manager.prolog") < names.index("start")
    agents = requests_by_agent(system)
    assert agents.get(CLIENTMOUNT_DAEMON, 0) > 0  # the daemon mounted through the API
    assert set(agents) == {"coral2-pipeline", CLIENTMOUNT_DAEMON}  # and nothing else did


def test_a_down_node_worker_fails_the_job_naming_its_nodes_then_catches_up(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None and system.store is not None
    system.kill("node-worker")
    try:
        jobid = system.flux.submit(nodes(2))
        bring_due(system, jobid, DeadlineKind.NODE_PROLOG)
        assert system.flux.wait_inactive([jobid], 60)
        job = system.flux.job(jobid)
        assert "start" not in event_names(job)
        [raised] = [e for e in job.exceptions if e["type"] == "node-prolog"]
        assert raised["note"].startswith("no answer from the node worker of compute")
        assert raised["note"].endswith("in 3600 s")
        held = time.monotonic() + 30  # its cleanup runs after INACTIVE: wait for it
        while not system.store.vnipool.query()["quarantine"]:  # its services may exist
            assert time.monotonic() < held, system.store.vnipool.query()
            time.sleep(0.05)
    finally:
        system.restart("node-worker")
    deadline = time.monotonic() + 60
    while system.store.vnipool.query()["quarantine"]:
        assert time.monotonic() < deadline, system.store.vnipool.query()
        time.sleep(0.1)
