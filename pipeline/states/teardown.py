"""Teardown: drop Flux's finalizer while it runs; when complete, release the epilog and delete."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, Epilog, JobChanges, JobRecord, Teardown
from pipeline.settings import RabbitSettings
from pipeline.states.actions import (
    Action,
    DeleteWorkflow,
    DisarmDeadline,
    FreeRabbits,
    MarkDone,
    RemoveFinalizer,
    SendOnce,
    timing,
)
from pipeline.states.snapshot import Snapshot, WorkflowState

#: The deadlines on a Workflow's states: all disarmed once it is torn down, those the
#: record does not name too (an arming whose task was killed before the record held it).
WORKFLOW_DEADLINES = frozenset(
    {
        DeadlineKind.SETUP,
        DeadlineKind.PRERUN,
        DeadlineKind.TC,
        DeadlineKind.POSTRUN,
        DeadlineKind.TEARDOWN_AFTER,
    }
)


def _kinds(armed: dict[str, str]) -> set[DeadlineKind]:
    """The deadline kinds a record names (one an older release named and this one does
    not know is left: nothing arms or handles it)."""
    return {DeadlineKind(kind) for kind in armed if kind in DeadlineKind.__members__.values()}


def free_rabbits(job: JobRecord) -> list[Action]:
    """End the hold on the job's rabbits that an early epilog release took."""
    if job.epilog != Epilog.EARLY:
        return []
    return [FreeRabbits(tuple(sorted(set(job.rabbits))))]


def refused_teardown(job: JobRecord) -> list[Action]:
    """DWS refused the Teardown (an Error, such as nnf's "persistent storage cannot be
    deleted while in use"): it will not complete without an operator, so Flux's epilog is
    not held for it until Flux's own timeout. The job has its exception
    (:mod:`~pipeline.states.errors`) and its epilog is released; the Workflow is left as
    it is for the operator (its storage may still be allocated), and the job is tracked
    until the Workflow is gone (``status`` lists it, the runbook says what to do)."""
    if not job.epilog_held:
        return []
    return [
        SendOnce("epilog-remove", {"id": job.jobid}, "epilog-remove"),
        MarkDone({"epilog": Epilog.RELEASED}),
    ]


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """While Teardown runs, drop Flux's finalizer; once complete, release the epilog (unless
    Flux gave it up), disarm every deadline and delete the Workflow, as coral2_dws does."""
    if not snapshot.complete(WorkflowState.TEARDOWN):
        if snapshot.status.get("status") == "Error":
            return [RemoveFinalizer(), *refused_teardown(job)]
        return [RemoveFinalizer()]
    release: list[Action] = []
    done: JobChanges = {"teardown": Teardown.DELETED}
    if job.epilog_held:
        release.append(SendOnce("epilog-remove", {"id": job.jobid}, "epilog-remove"))
        done["epilog"] = Epilog.RELEASED
    release += free_rabbits(job)
    return [
        *release,
        *timing(job.jobid, "Teardown", snapshot.workflow),
        *(DisarmDeadline(kind) for kind in sorted({*_kinds(job.deadlines), *WORKFLOW_DEADLINES})),
        DeleteWorkflow(),
        MarkDone(done),
    ]
