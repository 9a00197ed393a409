"""The Workflow a workload manager creates for a Flux job, and the names it carries."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pipeline.model.jobid import encode_f58

DWS_GROUP = "dataworkflowservices.github.io"
#: Flux's finalizer on its Workflows (flux-coral2 PR #141).
WLM_FINALIZER = "flux-framework.readthedocs.io/workflow"
#: The label on every child object of a Workflow.
WORKFLOW_LABEL = "dataworkflowservices.github.io/workflow.name"


#: The prefix of the Workflows Flux owns: ``fluxjob-<decimal jobid>``, as flux-coral2
#: names them.
WORKFLOW_PREFIX = "fluxjob-"


def workflow_name(jobid: int) -> str:
    """``fluxjob-<decimal jobid>``: the one rule that names a job's Workflow."""
    return f"{WORKFLOW_PREFIX}{jobid}"


def jobid_of_workflow(name: str) -> int | None:
    """The jobid of Workflow ``fluxjob-<jobid>``; None for a name no job of ours has (the
    inverse of :func:`workflow_name`)."""
    digits = name.removeprefix(WORKFLOW_PREFIX)
    if digits == name or not digits.isascii() or not digits.isdigit():
        return None
    if workflow_name(int(digits)) != name:  # leading zeros: not a name we make
        return None
    return int(digits)


def is_ours(name: str) -> bool:
    """Whether Workflow (or child object) ``name`` belongs to a Flux job."""
    return name.startswith(WORKFLOW_PREFIX)


def workflow_body(
    jobid: int,
    userid: int,
    groupid: int,
    directives: list[str],
    *,
    version: str = "v1alpha7",
) -> dict[str, Any]:
    """The Workflow flux-coral2 creates for a job."""
    return {
        "kind": "Workflow",
        "apiVersion": f"{DWS_GROUP}/{version}",
        "metadata": {
            "name": workflow_name(jobid),
            "namespace": "default",
            "finalizers": [WLM_FINALIZER],
        },
        "spec": {
            "desiredState": "Proposal",
            "dwDirectives": directives,
            "jobID": encode_f58(jobid, plain=True),
            "userID": userid,
            "groupID": groupid,
            "wlmID": "flux",
        },
    }


def k8s_time(stamp: object) -> float | None:
    """A Kubernetes Time or MicroTime (RFC 3339) in epoch seconds; None when missing or
    unreadable."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ready_since(workflow: Mapping[str, Any] | None, state: str) -> float | None:
    """When DWS marked ``workflow`` ready in ``state`` (``status.readyChange``, epoch s);
    None when it is not ready in that state."""
    status = (workflow or {}).get("status") or {}
    if status.get("state") != state or status.get("ready") is not True:
        return None
    return k8s_time(status.get("readyChange"))


def state_of(workflow: Mapping[str, Any] | None) -> str:
    """``status.state`` ("" when it has none yet)."""
    return str(((workflow or {}).get("status") or {}).get("state") or "")
