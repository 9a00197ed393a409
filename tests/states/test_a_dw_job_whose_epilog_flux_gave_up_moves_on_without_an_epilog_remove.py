"""dws-jobtap gave a job's DWS epilog up (nothing served ``dws.post_run``): the pipeline
moves its Workflow on as ``dws.post_run`` would, and marks the epilog abandoned, so no
``epilog-remove`` is sent when Teardown completes."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import Epilog, Teardown
from pipeline.states.actions import ArmDeadline, PatchDesiredState, SendOnce, UpdateJob
from pipeline.states.hooks import on_epilog_lost
from pipeline.states.teardown import advance as teardown_advance
from tests.states.factory import job, settings, snapshot

WORKFLOW: dict[str, Any] = {
    "metadata": {"name": "fluxjob-42"},
    "spec": {"desiredState": "PreRun"},
    "status": {"state": "PreRun", "ready": True, "status": "Completed"},
}


def test_a_job_that_ran_goes_on_to_postrun_with_its_epilog_abandoned() -> None:
    timeouts = settings(postrun_timeout=300.0, teardown_after=600.0)
    actions = on_epilog_lost(job(), True, None, timeouts, 0.0)
    assert actions[0] == UpdateJob({"epilog": Epilog.ABANDONED})
    [patch] = [a for a in actions if isinstance(a, PatchDesiredState)]
    assert (patch.expected, patch.desired) == ("PreRun", "PostRun")
    armed = {a.kind for a in actions if isinstance(a, ArmDeadline)}
    assert armed == {"teardown_after", "postrun_timeout"}


def test_a_job_that_never_ran_goes_straight_to_teardown() -> None:
    actions = on_epilog_lost(job(), False, WORKFLOW, settings(), 0.0)
    [patch] = [a for a in actions if isinstance(a, PatchDesiredState)]
    assert patch.desired == "Teardown"


def test_an_epilog_flux_already_released_changes_nothing() -> None:
    for released in (Epilog.RELEASED, Epilog.EARLY):
        assert on_epilog_lost(job(epilog=released), True, None, settings(), 0.0) == []


def test_a_teardown_asked_already_is_not_asked_again() -> None:
    actions = on_epilog_lost(job(teardown=Teardown.ASKED), True, None, settings(), 0.0)
    assert actions == [UpdateJob({"epilog": Epilog.ABANDONED})]


def test_its_teardown_completes_without_an_epilog_remove() -> None:
    done = snapshot("Teardown", ready=True)
    abandoned = job(epilog=Epilog.ABANDONED, teardown=Teardown.ASKED)
    held = job(teardown=Teardown.ASKED)
    sends = [
        a for a in teardown_advance(done, abandoned, 0.0, settings()) if isinstance(a, SendOnce)
    ]
    assert [s.kind for s in sends if s.kind == "epilog-remove"] == []
    held_sends = teardown_advance(done, held, 0.0, settings())
    assert "epilog-remove" in [a.kind for a in held_sends if isinstance(a, SendOnce)]
