"""A Workflow deleted by hand before DWS ever reconciled it has no state, and never will:
DWS leaves a deleting Workflow that lacks its own finalizer alone. Its job still gets the
exception that says the Workflow was deleted, and Flux's finalizer is let go, so the
object goes and the job ends. A Workflow with no state that nobody deletes is only
waited on (DWS's first status comes as an event of its own)."""

from __future__ import annotations

from pipeline.model.job import Teardown
from pipeline.states.actions import RemoveFinalizer, SendOnce
from pipeline.states.observed import decide
from pipeline.states.snapshot import Snapshot
from tests.states.factory import job, settings, snapshot

DELETED = {"deletionTimestamp": "2026-12-06T09:00:00Z", "name": "fluxjob-42"}


def deleted_unreconciled() -> Snapshot:
    shot = snapshot(None, desired="Proposal", ready=False, status="", elapsed=None)
    shot.workflow["metadata"] = dict(DELETED)
    shot.workflow["status"] = {}
    return shot


def test_its_job_gets_the_exception_and_the_finalizer_goes() -> None:
    actions = decide(deleted_unreconciled(), job(), 0.0, settings())
    [raised] = [a for a in actions if isinstance(a, SendOnce) and a.kind == "exception"]
    assert "workflow fluxjob-42 was deleted" in raised.payload["note"]
    assert actions[-1] == RemoveFinalizer()


def test_after_a_teardown_was_asked_only_the_finalizer_goes() -> None:
    shot = deleted_unreconciled()
    assert decide(shot, job(teardown=Teardown.ASKED), 0.0, settings()) == [RemoveFinalizer()]


def test_a_workflow_not_reconciled_yet_and_not_deleted_is_waited_on() -> None:
    shot = snapshot(None, desired="Proposal", ready=False, status="", elapsed=None)
    shot.workflow["status"] = {}
    assert decide(shot, job(), 0.0, settings()) == []
