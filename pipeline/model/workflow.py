"""The Workflow a workload manager creates for a Flux job, and the names it carries."""

from __future__ import annotations

from typing import Any

from pipeline.model.jobid import encode_f58

DWS_GROUP = "dataworkflowservices.github.io"
#: Flux's finalizer on its Workflows (flux-coral2 PR #141).
WLM_FINALIZER = "flux-framework.readthedocs.io/workflow"
#: The label on every child object of a Workflow.
WORKFLOW_LABEL = "dataworkflowservices.github.io/workflow.name"


def workflow_name(jobid: int) -> str:
    """``fluxjob-<decimal jobid>``."""
    return f"fluxjob-{jobid}"


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
