"""Teardown: drop Flux's finalizer while it runs; when complete, release the epilog and delete."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import (
    Action,
    DeleteWorkflow,
    DisarmDeadline,
    RemoveFinalizer,
    SendOnce,
    UpdateJob,
    timing,
)
from pipeline.states.snapshot import Snapshot, WorkflowState


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Rows 3 and 4 of §3.4."""
    if not snapshot.complete(WorkflowState.TEARDOWN):
        return [RemoveFinalizer()]
    actions: list[Action] = []
    if not job.epilog_removed:
        actions.append(SendOnce("epilog-remove", {"id": job.jobid}, "epilog-remove"))
    return [
        *actions,
        *timing(job.jobid, "Teardown", snapshot.workflow),
        *(DisarmDeadline(kind) for kind in sorted(job.deadlines)),
        DeleteWorkflow(),
        UpdateJob({"deleted": True, "epilog_removed": True}),
    ]
