"""The DWS admission webhooks for Workflows, run inside the simulated API server.

* mutating ``mworkflow.kb.io`` (create): one ``status.drivers`` entry per
  directive and watch state of the nnf ruleset, and ``DW_WORKFLOW_NAME`` /
  ``DW_WORKFLOW_NAMESPACE`` in ``status.env``;
* validating ``vworkflow.kb.io`` (create and update): the start rules,
  directive syntax, immutable fields, driver-entry rules and the state
  order — a denial is HTTP 403 with DWS's own text.
"""

from __future__ import annotations

from typing import Any

from coral2_sim.kube.patch import json_copy
from coral2_sim.kube.resources import DWS, ApiError, ResourceType
from coral2_sim.kube.store import KubeStore
from pipeline.errors import DirectiveError
from pipeline.model.directives import parse_directive, parse_directives

STATES = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown")

#: nnf ruleset watch states per command.
WATCH_STATES: dict[str, tuple[str, ...]] = {
    "jobdw": ("Proposal", "Setup", "PreRun", "PostRun", "Teardown"),
    "persistentdw": ("Proposal", "Setup", "PreRun", "PostRun", "Teardown"),
    "container": ("Proposal", "Setup", "PreRun", "PostRun", "Teardown"),
    "create_persistent": ("Proposal", "Setup", "Teardown"),
    "destroy_persistent": ("Proposal", "Teardown"),
    "copy_in": ("Proposal", "DataIn", "Teardown"),
    "copy_out": ("Proposal", "DataOut", "Teardown"),
}
IMMUTABLE = {
    "wlmID": "WLMID",
    "jobID": "JobID",
    "userID": "UserID",
    "groupID": "GroupID",
    "dwDirectives": "DWDirectives",
}


def _driver_error(index: int, text: str) -> ApiError:
    return _deny(f"Status.Drivers[{index}]: Internal error: {text}")


def _deny(text: str) -> ApiError:
    return ApiError(
        403, "Forbidden", f'admission webhook "vworkflow.kb.io" denied the request: {text}'
    )


def _mutate_create(obj: dict[str, Any]) -> dict[str, Any]:
    obj = json_copy(obj)
    status = obj.setdefault("status", {})
    drivers = status.setdefault("drivers", [])
    seen = {(d.get("driverID"), d.get("dwdIndex"), d.get("watchState")) for d in drivers}
    for index, line in enumerate(obj.get("spec", {}).get("dwDirectives") or []):
        try:
            command = parse_directive(line).command
        except DirectiveError:
            continue
        for state in WATCH_STATES.get(command, ()):
            if ("nnf", index, state) in seen:
                continue
            seen.add(("nnf", index, state))
            drivers.append(
                {
                    "driverID": "nnf",
                    "taskID": "",
                    "dwdIndex": index,
                    "watchState": state,
                    "lastHB": 0,
                    "completed": False,
                    "status": "Pending",
                }
            )
    env = status.setdefault("env", {})
    env["DW_WORKFLOW_NAME"] = obj["metadata"]["name"]
    env["DW_WORKFLOW_NAMESPACE"] = obj["metadata"].get("namespace") or "default"
    return obj


def _validate_create(obj: dict[str, Any]) -> None:
    spec = obj.get("spec") or {}
    desired = spec.get("desiredState")
    if desired != "Proposal":
        raise _deny(
            f'Spec.DesiredState: Invalid value: "{desired}": desired state must start in Proposal'
        )
    if spec.get("hurry"):
        raise _deny("Spec.Hurry: Forbidden: the hurry flag may not be set on creation")
    if (obj.get("status") or {}).get("state"):
        raise _deny("Status.State: Forbidden: the status state may not be set on creation")
    try:
        parse_directives(list(spec.get("dwDirectives") or []))
    except DirectiveError as exc:
        raise _deny(str(exc)) from exc


def _validate_drivers(old: dict[str, Any], new: dict[str, Any]) -> None:
    old_state = (old.get("status") or {}).get("state", "")
    old_drivers = (old.get("status") or {}).get("drivers") or []
    new_drivers = (new.get("status") or {}).get("drivers") or []
    for i, entry in enumerate(new_drivers):
        before = old_drivers[i] if i < len(old_drivers) else None
        if before is not None and before != entry and before.get("watchState") != old_state:
            raise _driver_error(i, "driver entry for non-current state cannot be changed")
        if entry.get("completed"):
            if entry.get("status") != "Completed":
                raise _driver_error(i, "driver cannot be completed without status=Completed")
            if entry.get("error"):
                raise _driver_error(i, "driver cannot be completed when error is present")
        if before is not None and before.get("completed") and not entry.get("completed"):
            raise _driver_error(i, "driver cannot change from completed state")


def _validate_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    desired = spec.get("desiredState")
    if spec.get("hurry") and desired != "Teardown":
        raise _deny("Spec.Hurry: Invalid value: true: the hurry flag may be set only in Teardown")
    for field, printed in IMMUTABLE.items():
        if spec.get(field) != old_spec.get(field):
            raise _deny(f"Spec.{printed}: Forbidden: field is immutable")
    old_status = old.get("status") or {}
    old_state = old_status.get("state", "")
    if old_state == "" and desired == "Proposal":
        return
    _validate_drivers(old, new)
    if desired in ("Teardown", old_state):
        return
    if desired not in STATES:
        raise ApiError(
            422,
            "Invalid",
            f'Workflow.{DWS} "{new["metadata"]["name"]}" is invalid: '
            f'spec.desiredState: Unsupported value: "{desired}"',
        )
    current = STATES.index(old_state) if old_state in STATES else -1
    wanted = STATES.index(desired)
    if wanted < current or old_state == "Teardown":
        raise _deny(
            f'Spec.DesiredState: Invalid value: "{desired}": DesiredState cannot progress backwards'
        )
    if wanted > current + 1:
        raise _deny(f'Spec.DesiredState: Invalid value: "{desired}": states cannot be skipped')
    if not old_status.get("ready"):
        raise _deny(
            f'Status.State: Invalid value: "{old_state}": current desired state not yet achieved'
        )


def workflow_webhooks(
    op: str, rtype: ResourceType, old: dict[str, Any] | None, new: dict[str, Any]
) -> dict[str, Any]:
    """The admission chain for Workflows (other types pass through)."""
    if (rtype.group, rtype.plural) != (DWS, "workflows"):
        return new
    if op == "CREATE":
        _validate_create(new)
        return _mutate_create(new)
    assert old is not None
    _validate_update(old, new)
    return new


def install(store: KubeStore) -> None:
    """Register the DWS webhooks with ``store`` (idempotent)."""
    if workflow_webhooks not in store.admission:
        store.admission.append(workflow_webhooks)
