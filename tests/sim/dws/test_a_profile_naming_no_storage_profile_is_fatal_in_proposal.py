"""A ``profile=`` that names no NnfStorageProfile fails the Workflow in Proposal with
nnf-sos's words, a Fatal user error ("Unable to find NnfStorageProfile: <name>",
``findProfileToUse``); one that names the site's profile goes on."""

from __future__ import annotations

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import wait_state, workflow


def test_an_unknown_profile_is_a_fatal_user_error(dws_side: DwsSide) -> None:
    directive = "#DW jobdw type=xfs capacity=10GiB name=scratch profile=nosuch"
    dws_side.dws.create_workflow(workflow(301, [directive]))
    wf = wait_state(dws_side.dws, "fluxjob-301", "Proposal", ready=False)
    assert wf["status"]["status"] == "Error"
    assert wf["status"]["message"] == (
        "DW Directive 0: User error: Unable to find NnfStorageProfile: nosuch"
    )
    # a Fatal error is a driver entry in Error (a Major one would be a TransientCondition)
    failed = [d for d in wf["status"]["drivers"] if d.get("status") == "Error"]
    assert [d["message"] for d in failed] == [
        "User error: Unable to find NnfStorageProfile: nosuch"
    ]


def test_the_sites_profile_goes_on(dws_side: DwsSide) -> None:
    directive = "#DW jobdw type=xfs capacity=10GiB name=scratch profile=default"
    dws_side.dws.create_workflow(workflow(302, [directive]))
    wf = wait_state(dws_side.dws, "fluxjob-302", "Proposal")
    assert wf["status"]["ready"] is True
