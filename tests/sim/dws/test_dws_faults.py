"""Injected faults show on the Workflow in the formats DWS uses."""

from __future__ import annotations

from coral2_sim.dws.fixtures import set_compute_access, set_rabbit_status
from coral2_sim.dws.nnf_driver import DriverFault

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute02"]


def test_a_fatal_error_in_a_state_shows_as_error_with_the_directive_index(
    dws_side: DwsSide,
) -> None:
    dws_side.faults.errors.append(DriverFault("Proposal", 1, "Fatal", "User", "bad things"))
    dws_side.dws.create_workflow(
        workflow(
            20,
            [
                "#DW jobdw type=xfs capacity=1GiB name=ab",
                "#DW copy_in source=/lus/global/a destination=$DW_JOB_ab",
            ],
        )
    )
    wf = wait_state(dws_side.dws, "fluxjob-20", "Proposal", ready=False)
    assert (wf["status"]["status"], wf["status"]["message"]) == (
        "Error",
        "DW Directive 1: User error: bad things",
    )


def test_a_transient_condition_clears_after_its_time(dws_side: DwsSide) -> None:
    dws_side.faults.errors.append(
        DriverFault("Proposal", 0, "Major", "Internal", "flaky", seconds=0.3)
    )
    dws_side.dws.create_workflow(workflow(21, ["#DW jobdw type=xfs capacity=1GiB name=ab"]))
    wf = wait_state(dws_side.dws, "fluxjob-21", "Proposal", ready=False)
    assert (wf["status"]["status"], wf["status"]["message"]) == (
        "TransientCondition",
        "DW Directive 0: Internal error: flaky",
    )
    assert wait_state(dws_side.dws, "fluxjob-21", "Proposal")["status"]["status"] == "Completed"


def test_a_workflow_level_user_error_is_reported_in_proposal(dws_side: DwsSide) -> None:
    dws_side.dws.create_workflow(workflow(22, ["#DW copy_in source=/a destination=$DW_JOB_nope"]))
    wf = wait_state(dws_side.dws, "fluxjob-22", "Proposal", ready=False)
    assert (
        wf["status"]["message"]
        == "DW Directive 0: User error: job storage instance 'nope' not found"
    )


def test_a_clientmount_that_never_mounts_becomes_a_transient_condition(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws_side.faults.never_mount.add("compute02")
    dws.create_workflow(workflow(23, ["#DW jobdw type=xfs capacity=1GiB name=ab"]))
    wf = wait_state(dws, "fluxjob-23", "Proposal")
    fill_servers(dws, wf, dws_side.mapping, HOSTS)
    advance(dws, "fluxjob-23", "Setup")
    dws.patch_computes("fluxjob-23", [{"name": h} for h in HOSTS])
    advance(dws, "fluxjob-23", "DataIn")
    dws.patch("workflows", "fluxjob-23", {"spec": {"desiredState": "PreRun"}})
    wf = wait_state(dws, "fluxjob-23", "PreRun", ready=False)
    assert wf["status"]["status"] in ("DriverWait", "TransientCondition")
    wf = wait_state(dws, "fluxjob-23", "PreRun", ready=False, timeout_s=10)
    deadline_wf = wf
    assert deadline_wf["status"]["message"] in (
        "DW Directive 0: pending mount",
        "DW Directive 0: Internal error: unable to mount file system on client nodes",
    )


def test_a_hung_state_never_completes_but_teardown_still_works(dws_side: DwsSide) -> None:
    dws_side.faults.hang_states.add("Proposal")
    dws_side.dws.create_workflow(workflow(24, ["#DW jobdw type=xfs capacity=1GiB name=ab"]))
    dws_side.dws.patch("workflows", "fluxjob-24", {"spec": {"desiredState": "Teardown"}})
    dws_side.faults.hang_states.clear()
    assert wait_state(dws_side.dws, "fluxjob-24", "Teardown")["status"]["ready"] is True


def test_rabbit_and_compute_health_changes_land_on_the_storage(dws_side: DwsSide) -> None:
    set_rabbit_status(dws_side.dws, "rabbit2", "Offline")
    set_compute_access(dws_side.dws, "rabbit1", "compute03", "Fenced")
    offline = dws_side.dws.get("storages", "rabbit2")["status"]
    assert (offline["status"], offline["message"]) == ("Offline", "Kubernetes node is offline")
    access = {
        c["name"]: c["status"]
        for c in dws_side.dws.get("storages", "rabbit1")["status"]["access"]["computes"]
    }
    assert access["compute03"] == "Fenced"
    assert access["compute01"] == "Ready"
