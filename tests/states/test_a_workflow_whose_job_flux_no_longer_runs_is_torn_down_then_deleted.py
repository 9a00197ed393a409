"""The stale sweep's rule: a fluxjob-* Workflow whose job ended in Flux (or that Flux
never knew, once a backlog read came after the Workflow was made and the pipeline holds no
record of it) is asked for Teardown after ``stale_after`` seconds, then deleted once
Teardown is done."""

from __future__ import annotations

from typing import Any

from pipeline.states.stale import Step, stale_since, step


def workflow(
    desired: str = "PreRun", state: str = "PreRun", ready: bool = True, **meta: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": "fluxjob-1", "creationTimestamp": "2026-01-01T00:00:00Z", **meta},
        "spec": {"desiredState": desired},
        "status": {"state": state, "ready": ready},
    }


CREATED = 1767225600.0  # 2026-01-01T00:00:00Z


def test_a_running_job_keeps_its_workflow() -> None:
    assert stale_since(workflow(), None, True, CREATED + 999, True) is None
    assert step(workflow(), None, CREATED + 10_000, 600) is Step.KEEP


def test_an_ended_job_keeps_its_workflow_for_stale_after_seconds() -> None:
    since = stale_since(workflow(), CREATED + 100, True, None, True)
    assert step(workflow(), since, CREATED + 699, 600) is Step.KEEP
    assert step(workflow(), since, CREATED + 701, 600) is Step.TEARDOWN


def test_teardown_is_waited_for_then_the_workflow_is_deleted() -> None:
    assert step(workflow("Teardown", "PostRun"), 0.0, 1e10, 600) is Step.WAIT
    assert step(workflow("Teardown", "Teardown", ready=False), 0.0, 1e10, 600) is Step.WAIT
    assert step(workflow("Teardown", "Teardown"), 0.0, 1e10, 600) is Step.DELETE
    assert step(workflow(deletionTimestamp="x"), 0.0, 1e10, 600) is Step.DELETE


def test_a_job_flux_never_listed_is_gone_only_after_a_later_backlog_read_and_with_no_record() -> (
    None
):
    assert stale_since(workflow(), None, False, None, False) is None  # no bridge read yet
    assert stale_since(workflow(), None, False, CREATED - 1, False) is None  # read before it
    assert stale_since(workflow(), None, False, CREATED + 5, True) is None  # we track it
    assert stale_since(workflow(), None, False, CREATED + 5, False) == CREATED + 5


def test_stale_after_0_never_sweeps() -> None:
    assert step(workflow(), 0.0, 1e10, 0) is Step.KEEP
