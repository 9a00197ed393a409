"""Without a copy of the Workflow, patch_desired_state first tries the move as one JSON
Patch whose ``test``s guard it; only a Workflow found elsewhere costs a read."""

from __future__ import annotations

from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import WLM_FINALIZER, DwsClient
from pipeline.errors import Conflict

G = "dataworkflowservices.github.io"


def make(dws: DwsClient, name: str, state: str, desired: str | None = None) -> dict[str, Any]:
    dws.create_workflow(
        {
            "apiVersion": f"{G}/v1alpha7",
            "kind": "Workflow",
            "metadata": {"name": name, "finalizers": [WLM_FINALIZER]},
            "spec": {"desiredState": "Proposal", "dwDirectives": [], "wlmID": "flux"},
        }
    )
    if desired:
        dws.patch("workflows", name, {"spec": {"desiredState": desired}})
    return dws.patch("workflows", name, {"status": {"state": state, "ready": True}})


def test_a_workflow_at_the_expected_state_moves_without_being_read(
    server: KubeApiServer, dws: DwsClient
) -> None:
    make(dws, "fluxjob-51", "Proposal")
    server.inject(code=500, method="GET", times=1)  # any read would take this fault
    moved = dws.patch_desired_state("fluxjob-51", "Setup", expected_state="Proposal")
    assert moved["spec"]["desiredState"] == "Setup"
    assert len(server.routes.faults) == 1  # still waiting: nothing was read
    server.routes.faults.clear()


def test_a_workflow_in_another_state_is_not_moved(dws: DwsClient) -> None:
    make(dws, "fluxjob-52", "Setup", desired="Setup")
    with pytest.raises(Conflict, match="in state 'Setup', not 'Proposal'"):
        dws.patch_desired_state("fluxjob-52", "DataIn", expected_state="Proposal")
    assert dws.get_workflow("fluxjob-52")["spec"]["desiredState"] == "Setup"


def test_a_workflow_already_asked_to_move_is_returned_unchanged(dws: DwsClient) -> None:
    before = make(dws, "fluxjob-53", "PreRun", desired="PostRun")  # a duplicate post_run
    again = dws.patch_desired_state("fluxjob-53", "PostRun", expected_state="PreRun")
    assert again["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert again["spec"]["desiredState"] == "PostRun"


def test_a_workflow_asked_to_tear_down_is_not_moved_back(dws: DwsClient) -> None:
    make(dws, "fluxjob-54", "PreRun", desired="Teardown")
    with pytest.raises(Conflict, match="already asked for 'Teardown'; not moving it to PostRun"):
        dws.patch_desired_state("fluxjob-54", "PostRun", expected_state="PreRun")
    assert dws.get_workflow("fluxjob-54")["spec"]["desiredState"] == "Teardown"
