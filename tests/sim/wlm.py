"""A minimal workload manager for the simulator tests: create, advance, fill Servers, tear down."""

from __future__ import annotations

import time
from typing import Any

from pipeline.clients.k8s import WLM_FINALIZER, DwsClient
from pipeline.model.breakdown import build_allocation_sets
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.sim.dws_admission import STATES


def workflow(jobid: int, directives: list[str], userid: int = 1001) -> dict[str, Any]:
    return {
        "apiVersion": "dataworkflowservices.github.io/v1alpha7",
        "kind": "Workflow",
        "metadata": {"name": f"fluxjob-{jobid}", "finalizers": [WLM_FINALIZER]},
        "spec": {
            "desiredState": "Proposal",
            "dwDirectives": directives,
            "jobID": f"f{jobid}",
            "userID": userid,
            "groupID": userid,
            "wlmID": "flux",
        },
    }


def wait_state(
    dws: DwsClient,
    name: str,
    state: str,
    *,
    timeout_s: float = 20,
    ready: bool = True,
    settled: tuple[str, ...] = ("Error", "TransientCondition"),
) -> dict[str, Any]:
    """Wait for ``state`` to be ready, or (ready=False) to show a ``settled`` status."""
    deadline = time.monotonic() + timeout_s
    while True:
        wf = dws.get_workflow(name)
        status = wf.get("status", {})
        reached = status.get("ready") if ready else status.get("status") in settled
        if status.get("state") == state and reached:
            return wf
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} never reached {state} (ready={ready}): {status}")
        time.sleep(0.01)


def fill_servers(
    dws: DwsClient, wf: dict[str, Any], mapping: RabbitMapping, hosts: list[str]
) -> None:
    counts = mapping.nodes_per_rabbit(hosts)
    for bd in dws.directive_breakdowns(wf):
        storage = bd.get("status", {}).get("storage")
        if storage:
            sets = build_allocation_sets(storage["allocationSets"], counts, len(hosts))
            dws.patch_servers(storage["reference"]["name"], sets)


def advance(dws: DwsClient, name: str, state: str) -> dict[str, Any]:
    previous = STATES[STATES.index(state) - 1]
    dws.patch_desired_state(name, state, expected_state=previous)
    return wait_state(dws, name, state)
