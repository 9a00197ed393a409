"""The DWS webhooks refuse what DWS refuses, with HTTP 403 and DWS's text."""

from __future__ import annotations

import pytest

from pipeline.errors import Forbidden
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

PREFIX = 'admission webhook "vworkflow.kb.io" denied the request: '


def refused(side: DwsSide, call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Forbidden) as info:
        call()
    assert info.value.status == 403
    assert str(info.value) == PREFIX + message


def test_a_bad_directive_is_refused_at_create_and_nothing_is_made(dws_side: DwsSide) -> None:
    body = workflow(10, ["#DW jobdw type=xfs capacity=10G name=ab"])
    refused(
        dws_side,
        lambda: dws_side.dws.create_workflow(body),
        "argument 'capacity' invalid string '10G'",
    )
    assert dws_side.dws.list_objects("workflows")[0] == []


def test_a_workflow_must_start_in_proposal_without_hurry(dws_side: DwsSide) -> None:
    body = workflow(11, [])
    body["spec"]["desiredState"] = "Setup"
    refused(
        dws_side,
        lambda: dws_side.dws.create_workflow(body),
        'Spec.DesiredState: Invalid value: "Setup": desired state must start in Proposal',
    )
    body = workflow(11, [])
    body["spec"]["hurry"] = True
    refused(
        dws_side,
        lambda: dws_side.dws.create_workflow(body),
        "Spec.Hurry: Forbidden: the hurry flag may not be set on creation",
    )


def test_states_cannot_be_skipped_or_reversed_or_entered_before_ready(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(12, []))
    wait_state(dws, "fluxjob-12", "Proposal")
    refused(
        dws_side,
        lambda: dws.patch("workflows", "fluxjob-12", {"spec": {"desiredState": "DataIn"}}),
        'Spec.DesiredState: Invalid value: "DataIn": states cannot be skipped',
    )
    advance(dws, "fluxjob-12", "Setup")
    refused(
        dws_side,
        lambda: dws.patch("workflows", "fluxjob-12", {"spec": {"desiredState": "Proposal"}}),
        'Spec.DesiredState: Invalid value: "Proposal": DesiredState cannot progress backwards',
    )


def test_advancing_before_the_state_is_ready_is_refused(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws_side.faults.hang_states.add("Proposal")
    dws.create_workflow(workflow(13, ["#DW jobdw type=xfs capacity=1GiB name=ab"]))
    wait_state(dws, "fluxjob-13", "Proposal", ready=False, settled=("DriverWait",))
    refused(
        dws_side,
        lambda: dws.patch("workflows", "fluxjob-13", {"spec": {"desiredState": "Setup"}}),
        'Status.State: Invalid value: "Proposal": current desired state not yet achieved',
    )


def test_teardown_is_always_allowed_and_cannot_be_left(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(14, []))
    wait_state(dws, "fluxjob-14", "Proposal")
    dws.patch("workflows", "fluxjob-14", {"spec": {"desiredState": "Teardown"}})
    wait_state(dws, "fluxjob-14", "Teardown")
    refused(
        dws_side,
        lambda: dws.patch("workflows", "fluxjob-14", {"spec": {"desiredState": "PostRun"}}),
        'Spec.DesiredState: Invalid value: "PostRun": DesiredState cannot progress backwards',
    )


def test_immutable_fields_stay_immutable(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(15, []))
    wait_state(dws, "fluxjob-15", "Proposal")
    refused(
        dws_side,
        lambda: dws.patch("workflows", "fluxjob-15", {"spec": {"userID": 7}}),
        "Spec.UserID: Forbidden: field is immutable",
    )


def test_servers_that_do_not_cover_the_breakdown_fail_setup_with_a_wlm_error(
    dws_side: DwsSide,
) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(16, ["#DW jobdw type=xfs capacity=10GiB name=ab"]))
    wait_state(dws, "fluxjob-16", "Proposal")
    dws.patch_servers(
        "fluxjob-16-0",
        [
            {
                "label": "xfs",
                "allocationSize": 1,
                "storage": [{"name": "rabbit1", "allocationCount": 1}],
            }
        ],
    )
    advance_patch = {"spec": {"desiredState": "Setup"}}
    dws.patch("workflows", "fluxjob-16", advance_patch)
    wf = wait_state(dws, "fluxjob-16", "Setup", ready=False)
    assert wf["status"]["status"] == "Error"
    assert (
        wf["status"]["message"]
        == "DW Directive 0: WLM error: storage directive requirements were not satisfied"
    )


def test_a_rabbit_without_capacity_fails_setup(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(17, ["#DW jobdw type=xfs capacity=30TiB name=ab"]))
    wf = wait_state(dws, "fluxjob-17", "Proposal")
    fill_servers(dws, wf, dws_side.mapping, ["compute01", "compute02"])
    dws.patch("workflows", "fluxjob-17", {"spec": {"desiredState": "Setup"}})
    wf = wait_state(dws, "fluxjob-17", "Setup", ready=False)
    assert (
        wf["status"]["message"]
        == "DW Directive 0: WLM error: rabbit1: insufficient capacity available"
    )
