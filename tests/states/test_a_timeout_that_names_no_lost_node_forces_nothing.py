"""A timeout that finds no node to lose (no rabbit reported not ready at setup_timeout, no
compute left unmounted when a PreRun TransientCondition outlasts tc_timeout) fails the job
with its timeout's exception. It never sends a node-failure exception with an empty
hostlist, nor forces the Workflow ready: nnf named nothing it waits for, so going on would
fail the same way further along."""

from __future__ import annotations

from pipeline.states.actions import ForceReady, SendOnce
from pipeline.states.deadlines import setup_timeout, tc_timeout
from tests.states.factory import job

TOLERANT = job(failure_tolerance=2)


def kinds(actions: list[object]) -> list[str]:
    return [a.kind for a in actions if isinstance(a, SendOnce)]


def test_setup_timeout_with_no_rabbit_behind_fails_the_job() -> None:
    actions = setup_timeout(TOLERANT, lustre=False, behind=[])
    assert kinds(actions) == ["exception"]
    [raised] = [a for a in actions if isinstance(a, SendOnce)]
    assert raised.payload["type"] == "dws-timeout"
    assert not any(isinstance(a, ForceReady) for a in actions)


def test_setup_timeout_with_computes_behind_a_slow_rabbit_goes_on_without_them() -> None:
    actions = setup_timeout(TOLERANT, lustre=False, behind=["c3"])
    [raised] = [a for a in actions if isinstance(a, SendOnce)]
    assert (raised.payload["type"], raised.payload["note"]) == ("dws-node-failure", "c3")
    assert ForceReady() in actions


def test_a_prerun_transient_condition_with_nothing_unmounted_fails_the_job() -> None:
    stuck = TOLERANT.model_copy(
        update={"tc_since": 1.0, "tc_prerun": True, "tc_message": "incorrect number"}
    )
    actions = tc_timeout(stuck, [], {})
    [raised] = [a for a in actions if isinstance(a, SendOnce)]
    assert raised.payload["type"] == "exception"
    assert "TransientCondition' state too long: incorrect number" in raised.payload["note"]
    assert not any(isinstance(a, ForceReady) for a in actions)
