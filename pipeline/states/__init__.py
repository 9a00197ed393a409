"""Pure lifecycle decisions: one module per DWS state and the table that picks one.

:func:`decide` is flux-coral2's Workflow event handler (§3.4) as a pure
function: given a fresh :class:`Snapshot` of the Workflow, the job record,
the clock and the settings, it returns the actions to perform. No I/O
happens here; the observe task carries the actions out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states import data_in, data_out, errors, post_run, pre_run, proposal, setup, teardown
from pipeline.states.actions import Action
from pipeline.states.snapshot import Snapshot, WorkflowState

Advance = Callable[[Snapshot, JobRecord, float, RabbitSettings], list[Action]]

#: What to do when each state is complete (Teardown: also while it is active).
TRANSITIONS: Mapping[WorkflowState, Advance] = {
    WorkflowState.PROPOSAL: proposal.advance,
    WorkflowState.SETUP: setup.advance,
    WorkflowState.DATA_IN: data_in.advance,
    WorkflowState.PRE_RUN: pre_run.advance,
    WorkflowState.POST_RUN: post_run.advance,
    WorkflowState.DATA_OUT: data_out.advance,
    WorkflowState.TEARDOWN: teardown.advance,
}


def decide(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Return the actions for this observation of the job's Workflow."""
    state = snapshot.state
    if state is None or job.deleted:
        return []
    if snapshot.active(WorkflowState.TEARDOWN):
        return TRANSITIONS[WorkflowState.TEARDOWN](snapshot, job, now, settings) + errors.advance(
            snapshot, job, now, settings
        )
    if job.toredown:
        return []
    actions: list[Action] = []
    if snapshot.complete(state):
        actions = TRANSITIONS[state](snapshot, job, now, settings)
    return actions + errors.advance(snapshot, job, now, settings)


__all__ = ["TRANSITIONS", "Action", "Snapshot", "WorkflowState", "decide"]
