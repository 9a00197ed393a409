"""Teardown: the finalizer goes while it runs; when complete, one epilog-remove and a delete."""

from __future__ import annotations

from pipeline.model.job import Epilog, Teardown
from pipeline.states.actions import DeleteWorkflow, MarkDone, RemoveFinalizer, SendOnce
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


def test_an_active_teardown_removes_the_flux_finalizer() -> None:
    assert decide(
        snapshot("Teardown", ready=False, status="DriverWait"), job(), 0.0, settings()
    ) == [RemoveFinalizer()]


def test_a_complete_teardown_releases_the_epilog_and_deletes() -> None:
    actions = decide(snapshot("Teardown"), job(teardown=Teardown.ASKED), 0.0, settings())
    assert SendOnce("epilog-remove", {"id": 42}, "epilog-remove") in actions
    assert DeleteWorkflow() in actions
    assert MarkDone({"teardown": Teardown.DELETED, "epilog": Epilog.RELEASED}) in actions


def test_an_aborted_job_gets_no_epilog_remove() -> None:
    aborted = job(teardown=Teardown.ASKED, epilog=Epilog.ABANDONED)
    actions = decide(snapshot("Teardown"), aborted, 0.0, settings())
    assert not any(isinstance(a, SendOnce) and a.kind == "epilog-remove" for a in actions)
    assert DeleteWorkflow() in actions
    assert MarkDone({"teardown": Teardown.DELETED}) in actions


def test_a_deleted_job_is_left_alone() -> None:
    assert decide(snapshot("Teardown"), job(teardown=Teardown.DELETED), 0.0, settings()) == []
