"""A job whose processes outlive it, keeping its CXI services busy: the job still ends at
once, its node is drained once housekeeping gives up, its VNIs stay quarantined until an admin's
``coral2-pipeline slingshot clean`` sweeps the node, then they are free again."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.demo.sweep import BUSY_ENV, DRAIN_REASON, sweep_busy_nodes
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes, start_system

BUSY_UID = 4242


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True, cxi_busy=(BUSY_UID,), extra_env=dict(BUSY_ENV))
    yield sim
    sim.stop()


def drained(system: SimulatedSystem, timeout_s: float = 30) -> dict[str, str]:
    assert system.flux is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with system.flux.lock:
            found = dict(system.flux.resources.drained)
        if found:
            return found
        time.sleep(0.05)
    return {}


def test_busy_services_drain_their_node_and_a_sweep_frees_the_vnis(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None and system.store is not None
    jobid = system.flux.submit(nodes(1), userid=BUSY_UID)
    assert system.flux.wait_inactive([jobid], 60), event_names(system.flux.job(jobid))
    assert system.flux.job(jobid).result == "COMPLETED"
    [(host, reason)] = drained(system).items()
    assert host == system.flux.job(jobid).hosts[0]
    assert reason.startswith(DRAIN_REASON) and "cxi0 service" in reason
    [held] = system.store.vnipool.query()["quarantine"].values()
    assert held["waiting"] == host

    swept, problem = sweep_busy_nodes(system)
    assert problem == "" and len(swept) == 1
    state = system.store.vnipool.query()
    assert state["quarantine"] == {} and state["free"] == "1024-65535"
    record = system.store.jobs.get(jobid)
    assert record is not None and record.slingshot is not None
    deadline = time.monotonic() + 20
    while host not in (record.slingshot.clean if record.slingshot else []):
        assert time.monotonic() < deadline, record
        time.sleep(0.05)
        record = system.store.jobs.get(jobid)
        assert record is not None


def test_a_job_whose_services_go_away_in_time_drains_nothing(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.store is not None
    jobid = system.flux.submit(nodes(2))
    assert system.flux.wait_inactive([jobid], 60)
    deadline = time.monotonic() + 20
    while system.store.vnipool.query()["quarantine"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with system.flux.lock:
        assert system.flux.resources.drained == {}
