"""A Workflow found gone: the observe notes it (the record's state ``deleted``); a job
whose Teardown was done is finished; one whose Workflow vanished before its Teardown was
seen has its epilog released if Flux still waits for it (once, under the mark a Teardown
uses), every state deadline disarmed, its record marked deleted and released, and is
finished; with no epilog held, the hold an early release took on its rabbits ends
instead. A job with no record is finished only if the pipeline tracked it. ``dws.post_run``
of a job that ran moves PreRun on to PostRun, stopping if the Workflow moved on, letting
the job go if it is gone; ``teardown_after`` is armed for any positive value."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, Epilog, Teardown
from pipeline.states.actions import (
    ArmDeadline,
    DisarmDeadline,
    FinishJob,
    FreeRabbits,
    MarkDone,
    PatchDesiredState,
    SendOnce,
    UpdateJob,
)
from pipeline.states.hooks import on_post_run, on_workflow_gone, workflow_gone
from tests.states.factory import job, settings

STATES = [
    DisarmDeadline(kind)
    for kind in sorted(
        {
            DeadlineKind.POSTRUN,
            DeadlineKind.PRERUN,
            DeadlineKind.SETUP,
            DeadlineKind.TC,
            DeadlineKind.TEARDOWN_AFTER,
        }
    )
]


def test_a_held_epilog_is_released_once_and_the_job_finished() -> None:
    assert workflow_gone(job()) == [
        SendOnce("epilog-remove", {"id": 42}, "epilog-remove"),
        *STATES,
        MarkDone({"teardown": Teardown.DELETED, "epilog": Epilog.RELEASED}),
        FinishJob(),
    ]


def test_with_no_epilog_held_an_early_releases_rabbits_are_freed_instead() -> None:
    early = job(epilog=Epilog.EARLY, rabbits=["r1"])
    assert workflow_gone(early) == [
        FreeRabbits(("r1",)),
        *STATES,
        MarkDone({"teardown": Teardown.DELETED}),
        FinishJob(),
    ]


def test_the_observe_notes_the_workflow_deleted_and_lets_the_job_go() -> None:
    noted = UpdateJob({"state": "deleted"})
    assert on_workflow_gone(job(teardown=Teardown.DELETED), 42) == [noted, FinishJob()]
    vanished = on_workflow_gone(job(observed_rv="7"), 42)
    assert vanished[0] == noted and vanished[-1] == FinishJob()
    assert on_workflow_gone(job(), 42) == [noted]  # never read: its own hooks will come
    assert on_workflow_gone(None, 42) == [FinishJob()]
    assert on_workflow_gone(None, 42, tracked=False) == []


def test_post_run_moves_a_job_that_ran_on_to_postrun() -> None:
    actions = on_post_run(job(), True, None, settings(teardown_after=1), 0.0)
    assert actions[0] == PatchDesiredState(
        "PreRun", "PostRun", if_moved_on="stop", if_gone=tuple(workflow_gone(job()))
    )
    assert ArmDeadline(DeadlineKind.TEARDOWN_AFTER, 1.0, "post_run") in actions
    never = on_post_run(job(), True, None, settings(teardown_after=0), 0.0)
    assert not [a for a in never if isinstance(a, ArmDeadline) and a.kind == "teardown_after"]
