"""A Teardown that DWS refuses (an Error: nnf's "persistent storage cannot be deleted while
in use") never completes without an operator. The job gets its exception and its epilog
is released at once, not held until Flux's timeout; the Workflow is neither deleted nor
the job finished: both wait for the operator."""

from __future__ import annotations

from pipeline.model.job import Epilog, Teardown
from pipeline.states.actions import DeleteWorkflow, FinishJob, MarkDone, SendOnce
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot

REFUSED = "DW Directive 0: User error: persistent storage cannot be deleted while in use"


def test_the_epilog_is_released_with_the_jobs_exception() -> None:
    shot = snapshot("Teardown", ready=False, status="Error", message=REFUSED)
    actions = decide(shot, job(teardown=Teardown.ASKED), 0.0, settings())
    sent = {a.kind: a.payload for a in actions if isinstance(a, SendOnce)}
    assert sent["epilog-remove"] == {"id": 42}
    assert REFUSED in sent["exception"]["note"]
    assert MarkDone({"epilog": Epilog.RELEASED}) in actions
    assert not any(isinstance(a, DeleteWorkflow | FinishJob) for a in actions)


def test_an_epilog_already_released_is_not_released_again() -> None:
    shot = snapshot("Teardown", ready=False, status="Error", message=REFUSED)
    released = job(teardown=Teardown.ASKED, epilog=Epilog.RELEASED)
    actions = decide(shot, released, 0.0, settings())
    assert [a.kind for a in actions if isinstance(a, SendOnce)] == ["exception"]


def test_a_teardown_still_running_holds_the_epilog() -> None:
    shot = snapshot("Teardown", ready=False, status="Running")
    actions = decide(shot, job(teardown=Teardown.ASKED), 0.0, settings())
    assert not any(isinstance(a, SendOnce) for a in actions)
