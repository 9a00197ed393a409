"""Every job is isolated on Slingshot: VNIs reserved and CXI services on each of its nodes
before it starts, everything given back after it ends."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes, start_system


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True)
    yield sim
    sim.stop()


def run(system: SimulatedSystem, option: Any = None, n: int = 2, dw: Any = None) -> Any:
    assert system.flux is not None
    extra: dict[str, Any] = {} if dw is None else {"dw": dw}
    if option is not None:
        extra["shell"] = {"options": {"cray-slingshot": option}}
    jobid = system.flux.submit(nodes(n), system=extra)
    assert system.flux.wait_inactive([jobid], 60), event_names(system.flux.job(jobid))
    return system.flux.job(jobid)


def pool_settles(system: SimulatedSystem, timeout_s: float = 20) -> dict[str, Any]:
    """The pool once no job holds or waits on VNIs (the epilogs end after INACTIVE)."""
    assert system.store is not None
    deadline = time.monotonic() + timeout_s
    while True:
        state = system.store.vnipool.query()
        if not state["jobs"] and not state["quarantine"]:
            return state
        assert time.monotonic() < deadline, state
        time.sleep(0.05)


def slingshot_event(job: Any) -> dict[str, Any]:
    [event] = [e.context for e in job.eventlog if e.name == "cray-slingshot"]
    return dict(event)


def test_a_job_runs_after_its_vnis_and_its_nodes_services(system: SimulatedSystem) -> None:
    job = run(system, {"vnicount": 2})
    names = event_names(job)
    assert job.result == "COMPLETED"
    assert len(slingshot_event(job)["vnis"]) == 2
    assert names.index("cray-slingshot") < names.index("prolog-finish job-manager.prolog")
    assert names.index("prolog-finish job-manager.prolog") < names.index("start")
    assert pool_settles(system)["free"] == "1024-65535"


def test_a_job_that_turns_slingshot_off_runs_without_vnis(system: SimulatedSystem) -> None:
    job = run(system, "off")
    assert job.result == "COMPLETED"
    assert slingshot_event(job) == {"vnis": [], "empty-reason": "disabled by user request"}


def test_a_reservation_that_cannot_be_made_fails_the_job(system: SimulatedSystem) -> None:
    job = run(system, {"vnicount": 9})
    assert job.result == "FAILED"
    assert "start" not in event_names(job)
    [raised] = [e for e in job.exceptions if e["type"] == "cray-slingshot"]
    assert raised["note"] == "VNI count must be within 1-4"
    assert raised["severity"] == 0


def test_a_malformed_option_fails_the_job_with_the_plugins_message(system: SimulatedSystem) -> None:
    job = run(system, {"vnicount": "two"})
    [raised] = [e for e in job.exceptions if e["type"] == "cray-slingshot"]
    assert (
        raised["note"] == "error parsing cray-slingshot shell options: Expected integer, got string"
    )


def test_a_rabbit_job_gets_both_its_storage_and_its_vnis(system: SimulatedSystem) -> None:
    job = run(system, None, dw="#DW jobdw type=xfs capacity=8GiB name=scratch")
    assert job.result == "COMPLETED"
    assert len(slingshot_event(job)["vnis"]) == 1
    assert pool_settles(system)["jobs"] == {}
