"""As soon as Setup begins the simulated nnf writes one ``{allocationSize: 0, ready: false}``
Servers status entry per rabbit, as nnf-sos's Servers controller does, hung Setup
included, and turns each ready as that rabbit's storage comes up. A rabbit whose storage
never comes up stays not ready; a Setup forced ready without it completes, and PreRun then
finds no storage on that rabbit: a Major error (a TransientCondition) with nnf's words."""

from __future__ import annotations

import time
from typing import Any

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute17"]  # behind rabbit1 and rabbit2
XFS = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def ask_setup(side: DwsSide, jobid: int) -> str:
    dws, name = side.dws, f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, [XFS]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, HOSTS)
    dws.patch_desired_state(name, "Setup", expected_state="Proposal")
    return name


def servers_status(side: DwsSide, name: str) -> dict[str, Any]:
    """The Servers' status once it has entries (waited for)."""
    deadline = time.monotonic() + 20
    while not (status := side.dws.get("servers", f"{name}-0").get("status") or {}).get(
        "allocationSets"
    ):
        assert time.monotonic() < deadline, status
        time.sleep(0.01)
    return status


def by_rabbit(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r: e for s in status["allocationSets"] for r, e in s["storage"].items()}


def test_a_hung_setup_shows_every_rabbit_not_ready(dws_side: DwsSide) -> None:
    dws_side.faults.hang_states.add("Setup")
    status = servers_status(dws_side, ask_setup(dws_side, 91))
    assert status["ready"] is False
    assert by_rabbit(status) == {
        "rabbit1": {"allocationSize": 0, "ready": False},
        "rabbit2": {"allocationSize": 0, "ready": False},
    }


def test_a_slow_rabbit_stays_not_ready_while_the_others_come_up(dws_side: DwsSide) -> None:
    dws_side.faults.slow_rabbits.add("rabbit2")
    name = ask_setup(dws_side, 92)
    deadline = time.monotonic() + 20
    while not by_rabbit(servers_status(dws_side, name))["rabbit1"]["ready"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    entries = by_rabbit(servers_status(dws_side, name))
    assert entries["rabbit1"]["allocationSize"] > 0
    assert entries["rabbit2"] == {"allocationSize": 0, "ready": False}
    assert dws_side.dws.get_workflow(name)["status"]["ready"] is False


def test_prerun_after_a_setup_forced_ready_without_a_rabbit_is_a_transient_condition(
    dws_side: DwsSide,
) -> None:
    dws, faults = dws_side.dws, dws_side.faults
    faults.slow_rabbits.add("rabbit2")
    name = ask_setup(dws_side, 93)
    servers_status(dws_side, name)
    dws.patch("workflows", name, {"spec": {"forceReady": True}})  # the WLM lets rabbit2 go
    assert wait_state(dws, name, "Setup")["status"]["message"] == "Forced Ready"
    dws.patch_computes(name, [{"name": "compute01"}])
    advance(dws, name, "DataIn")
    dws.patch_desired_state(name, "PreRun", expected_state="DataIn")
    status = wait_state(dws, name, "PreRun", ready=False)["status"]
    assert status["status"] == "TransientCondition"
    assert status["message"] == "DW Directive 0: Internal error: "
    [driver] = [d for d in status["drivers"] if d["watchState"] == "PreRun"]
    assert (
        driver["error"] == "internal error: incorrect number of NnfNodeStorages. found 0. Needed 1."
    )
