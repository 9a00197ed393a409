"""The simulated DWS keeps a rabbit's ``status.capacity`` as nnf-sos does — its free
space: a running #DW job's allocation is taken off it, and given back at Teardown; its
drives' ``status.devices[].capacity`` still add up to the whole."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes

GiB = 2**30
DW = "#DW jobdw type=xfs capacity=100GiB name=scratch"


def status(system: SimulatedSystem, rabbit: str) -> dict[str, Any]:
    assert system.dws is not None
    found: dict[str, Any] = system.dws.get("storages", rabbit)["status"]
    return found


def held_on(system: SimulatedSystem) -> dict[str, int]:
    """Each rabbit whose free space is less than its drives' total, and by how much."""
    out = {}
    for rabbit in system.mapping.rabbits:
        now = status(system, rabbit)
        taken = sum(d["capacity"] for d in now["devices"]) - now["capacity"]
        if taken:
            out[rabbit] = taken
    return out


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_running_jobs_allocation_is_off_the_free_space_until_teardown(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    flux = system.flux
    wait_for("every rabbit all free", lambda: not held_on(system))
    jobid = flux.submit(nodes(1), system={"dw": DW}, runtime_s=3600)
    wait_for("the job running", lambda: flux.job(jobid).state == "RUN")
    wait_for("its allocation off a rabbit's free space", lambda: held_on(system))
    [(rabbit, held)] = held_on(system).items()
    assert held >= 100 * GiB
    flux.cancel(jobid)
    assert flux.wait_inactive([jobid], 300), event_names(flux.job(jobid))
    wait_for(f"{rabbit}'s space given back", lambda: not held_on(system))
