"""The stale sweep's actions and its edges: a stale Workflow is asked for Teardown from
whatever state it is in, going on if it moved on and doing nothing more if it is gone;
one done with Teardown is deleted; the wait is ``stale_after`` seconds to the second
(any positive wait counts; 0 switches the sweep off), and a backlog read at the very
moment the Workflow was made does not make its job gone. A record Flux ended is finished
only once ``after_s`` has passed since, and only while it is tracked."""

from __future__ import annotations

from typing import Any

from pipeline.states.actions import DeleteWorkflow, FinishJob, PatchDesiredState
from pipeline.states.stale import Step, on_ended, on_stale, stale_since, step


def workflow() -> dict[str, Any]:
    return {
        "metadata": {"name": "fluxjob-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"desiredState": "PreRun"},
        "status": {"state": "PreRun", "ready": True},
    }


CREATED = 1767225600.0  # 2026-01-01T00:00:00Z


def test_teardown_is_asked_from_any_state_and_deletion_once_done() -> None:
    assert on_stale(Step.TEARDOWN) == [
        PatchDesiredState(None, "Teardown", if_moved_on="continue", if_gone=())
    ]
    assert on_stale(Step.DELETE) == [DeleteWorkflow()]
    assert on_stale(Step.WAIT) == [] and on_stale(Step.KEEP) == []


def test_the_wait_is_stale_after_to_the_second_and_any_positive_one_sweeps() -> None:
    assert step(workflow(), 100.0, 700.0, 600) is Step.TEARDOWN  # exactly 600 s later
    assert step(workflow(), 100.0, 699.9, 600) is Step.KEEP
    assert step(workflow(), 100.0, 101.0, 1) is Step.TEARDOWN  # a wait of 1 s is a wait


def test_a_backlog_read_at_the_workflows_own_creation_is_not_after_it() -> None:
    assert stale_since(workflow(), None, False, CREATED, False) is None
    assert stale_since(workflow(), None, False, CREATED + 0.5, False) == CREATED + 0.5


def test_an_ended_record_is_finished_once_after_s_has_passed_while_tracked() -> None:
    assert on_ended(True, 100.0, 161.0, 60) == [FinishJob()]
    assert on_ended(True, 100.0, 160.0, 60) == []  # not past yet
    assert on_ended(True, 100.0, 159.0, 60) == []
    assert on_ended(False, 100.0, 1e9, 60) == []  # not tracked: nothing to finish
    assert on_ended(True, None, 1e9, 60) == []  # not ended in Flux
    assert on_ended(True, 100.0, 1e9, 0) == []  # 0: never
    assert on_ended(True, 100.0, 1e9, 1) == [FinishJob()]
