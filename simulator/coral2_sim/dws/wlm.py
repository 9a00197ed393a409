"""A minimal workload manager that drives raw Workflows, for the platform demo and tests.

It does what a WLM must do at each step: create the
Workflow with its finalizer, fill Servers from the breakdowns after
Proposal, fill Computes after Setup, advance one state at a time, and at
Teardown remove its finalizer and delete. It stands in for the Flux side
until the lifecycle pipeline replaces it.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.model.breakdown import build_allocation_sets
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.workflow import workflow_body as model_workflow_body

STATES = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown")


def workflow_body(jobid: int, directives: list[str], userid: int = 1001) -> dict[str, Any]:
    """The Workflow this WLM creates for ``jobid``: the same body the pipeline creates."""
    return model_workflow_body(jobid, userid, userid, directives)


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
            raise TimeoutError(f"{name} never reached {state} (ready={ready}): {status}")
        time.sleep(0.01)


def fill_servers(
    dws: DwsClient, workflow: dict[str, Any], mapping: RabbitMapping, hosts: list[str]
) -> None:
    """Write every Servers object of the Workflow's breakdowns for ``hosts``."""
    counts = mapping.nodes_per_rabbit(hosts)
    for breakdown in dws.directive_breakdowns(workflow):
        storage = breakdown.get("status", {}).get("storage")
        if storage:
            sets = build_allocation_sets(storage["allocationSets"], counts, len(hosts))
            dws.patch_servers(storage["reference"]["name"], sets)


def advance(dws: DwsClient, name: str, state: str) -> dict[str, Any]:
    """Ask for ``state`` (from the one before it) and wait until it is ready."""
    previous = STATES[STATES.index(state) - 1]
    dws.patch_desired_state(name, state, expected_state=previous)
    return wait_state(dws, name, state)


def step(dws: DwsClient, name: str, state: str, mapping: RabbitMapping, hosts: list[str]) -> None:
    """Do the WLM's work due after ``state`` is ready, then ask for the next state.

    After Teardown: remove the WLM finalizer and delete the Workflow.
    """
    if state == "Teardown":
        dws.remove_finalizer(name)
        dws.delete_workflow(name)
        return
    if state == "Proposal":
        fill_servers(dws, dws.get_workflow(name), mapping, hosts)
    if state == "Setup":
        dws.patch_computes(name, [{"name": h} for h in hosts])
    dws.patch_desired_state(name, STATES[STATES.index(state) + 1], expected_state=state)
