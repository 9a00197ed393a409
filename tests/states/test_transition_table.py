"""The transition table covers every DWS state, in DWS's order."""

from __future__ import annotations

import pytest

from pipeline.states.observed import TRANSITIONS
from pipeline.states.snapshot import WorkflowState


@pytest.mark.parametrize("state", list(WorkflowState))
def test_every_state_has_an_advance_function(state: WorkflowState) -> None:
    assert callable(TRANSITIONS[state])


def test_states_follow_the_dws_order_and_teardown_is_last() -> None:
    order = [s.value for s in WorkflowState]
    assert order == ["Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown"]
    assert [s.next.value for s in WorkflowState] == [*order[1:], "Teardown"]
