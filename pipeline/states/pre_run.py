"""PreRun complete: hand the job its environment and release the prolog."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states import nodes
from pipeline.states.actions import Action, DisarmDeadline, SendOnce, exception, timing
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Send ``prolog-remove`` with ``status.env`` (+ ``DW_WORKFLOW_TOKEN``) once; the job's
    nodes stop the clientmount service again (:func:`pipeline.states.nodes.on_mounted`)."""
    if snapshot.token_refused is not None:  # it would run without the token it needs
        note = f"DW_WORKFLOW_TOKEN: {snapshot.token_refused}"
        return [exception(job.jobid, "exception", 0, note, "exception:workflow-token")]
    variables = {str(k): str(v) for k, v in (snapshot.status.get("env") or {}).items()}
    if snapshot.workflow_token is not None:
        variables["DW_WORKFLOW_TOKEN"] = snapshot.workflow_token
    return [
        SendOnce("prolog-remove", {"id": job.jobid, "variables": variables}, "prolog-remove"),
        DisarmDeadline(DeadlineKind.PRERUN),
        *timing(job.jobid, "PreRun", snapshot.workflow),
        *nodes.on_mounted(job),
    ]
