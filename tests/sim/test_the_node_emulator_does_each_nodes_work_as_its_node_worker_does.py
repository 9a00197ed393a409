"""The fan-out benchmarks' node emulator serves every compute's queue from one light process
with the node worker's own code: a job's prolog and epilog reach each node, each node's
CXI services are made on its simulated NIC and destroyed after, each answer is signed
with that node's key and verified — and with ``hold`` it answers only once every node
has its message, all at once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, start_system

NODES = 4


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True, signing=True, node_emulators=1, emulator_hold=NODES)
    yield sim
    sim.stop()


def settled(system: SimulatedSystem, timeout_s: float = 120) -> bool:
    """Every node task sent has been answered (the job's epilogs too), and every node
    confirmed its services gone: the job's VNIs left quarantine (a service still busy at
    the epilog is destroyed on a later try, after the ledger has emptied)."""
    assert system.store is not None
    deadline = time.monotonic() + timeout_s
    while system.store.ledger.unsettled(1) or held(system.store.vnipool.query()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def held(pool: dict[str, Any]) -> bool:
    return bool(pool["jobs"] or pool["quarantine"])


def test_a_job_on_emulated_nodes_runs_and_leaves_nothing(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.store is not None
    jobid = system.flux.submit(nodes(NODES))
    assert system.flux.wait_inactive([jobid], 120), system.flux.job(jobid).eventlog
    job = system.flux.job(jobid)
    assert job.result == "COMPLETED", job.exceptions
    times = json.loads(system.emulator_times(0).read_text())
    assert times["sent"] <= times["answered"]
    assert settled(system)
    worked = sorted((system.workdir / "emulator-0" / "nics").glob("*.json"))
    assert len(worked) == NODES  # every node of the job made its services, no other did
    for state in worked:
        for device, nic in json.loads(state.read_text()).items():
            left = [s["id"] for s in nic["services"] if s["id"] != 1]  # 1: the default
            assert left == [], f"{state.stem} {device}: the job's services {left} remain"
    pool = system.store.vnipool.query()
    assert pool["jobs"] == {} and pool["quarantine"] == {}
