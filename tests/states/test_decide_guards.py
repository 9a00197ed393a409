"""When nothing may be done (no state, a moving state, a torn-down job); never a backward move."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.model.job import Teardown
from pipeline.states.actions import PatchDesiredState
from pipeline.states.observed import decide
from pipeline.states.snapshot import WorkflowState
from tests.states.factory import job, settings, snapshot, xfs_breakdown


def test_a_workflow_before_its_first_transition_gets_nothing() -> None:
    assert decide(snapshot(None), job(), 0.0, settings()) == []


def test_a_state_the_controller_has_not_entered_yet_gets_nothing() -> None:
    assert decide(snapshot("Setup", desired="DataIn"), job(), 0.0, settings()) == []


def test_a_torn_down_job_only_finishes_teardown() -> None:
    assert decide(snapshot("Setup"), job(teardown=Teardown.ASKED), 0.0, settings()) == []


states = st.sampled_from([s.value for s in WorkflowState])


@given(
    states,
    st.booleans(),
    st.sampled_from(["Completed", "DriverWait", "Error", "TransientCondition"]),
    st.booleans(),
    st.floats(min_value=0, max_value=1e9),
)
def test_decisions_are_deterministic_and_only_move_forward(
    state: str, ready: bool, status: str, asked: bool, now: float
) -> None:
    snap = snapshot(state, ready=ready, status=status, breakdowns=(xfs_breakdown(4),))
    record = job(teardown=Teardown.ASKED if asked else Teardown.NOT_ASKED)
    first = decide(snap, record, now, settings())
    assert first == decide(snap, record, now, settings())
    order = [s.value for s in WorkflowState]
    for action in first:
        if isinstance(action, PatchDesiredState):
            if action.desired == "Teardown":
                assert action.expected in (state, None)
            else:
                assert action.expected == state
                assert action.desired == order[order.index(state) + 1]
