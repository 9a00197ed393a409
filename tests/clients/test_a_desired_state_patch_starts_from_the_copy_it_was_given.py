"""patch_desired_state starts from the Workflow copy the caller just read — no second read —
and a stale copy costs a conflict and a fresh read, never a lost update."""

from __future__ import annotations

from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import WLM_FINALIZER, DwsClient
from pipeline.errors import Conflict

G = "dataworkflowservices.github.io"


def make(dws: DwsClient, name: str, state: str) -> dict[str, Any]:
    dws.create_workflow(
        {
            "apiVersion": f"{G}/v1alpha7",
            "kind": "Workflow",
            "metadata": {"name": name, "finalizers": [WLM_FINALIZER]},
            "spec": {"desiredState": "Proposal", "dwDirectives": [], "wlmID": "flux"},
        }
    )
    return dws.patch("workflows", name, {"status": {"state": state, "ready": True}})


def test_a_fresh_copy_is_patched_without_reading_the_workflow_again(
    server: KubeApiServer, dws: DwsClient
) -> None:
    fresh = make(dws, "fluxjob-41", "Proposal")
    server.inject(code=500, method="GET", times=1)  # any read would take this fault
    patched = dws.patch_desired_state(
        "fluxjob-41", "Setup", expected_state="Proposal", current=fresh
    )
    assert patched["spec"]["desiredState"] == "Setup"
    assert len(server.routes.faults) == 1  # still waiting: nothing was read
    server.routes.faults.clear()


def test_a_stale_copy_is_read_again_and_checked_again(dws: DwsClient) -> None:
    stale = make(dws, "fluxjob-42", "Proposal")
    dws.patch("workflows", "fluxjob-42", {"status": {"state": "Setup"}})  # DWS moved on
    with pytest.raises(Conflict, match="in state 'Setup', not 'Proposal'"):
        dws.patch_desired_state("fluxjob-42", "Setup", expected_state="Proposal", current=stale)
    assert dws.get_workflow("fluxjob-42")["spec"]["desiredState"] == "Proposal"
