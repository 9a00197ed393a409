"""A Workflow change, observed: what to do about it (coral2_dws's Workflow event handler).

One module per DWS state holds each state's decision; :data:`TRANSITIONS` says which runs
when a state is complete, and :mod:`~pipeline.states.errors` handles Error and
TransientCondition whatever the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pipeline.model.job import JobRecord, Teardown
from pipeline.model.workflow import workflow_name
from pipeline.settings import RabbitSettings
from pipeline.states import data_in, data_out, errors, post_run, pre_run, proposal, setup, teardown
from pipeline.states.actions import Action, PatchDesiredState, RemoveFinalizer, exception
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
    if job.teardown == Teardown.DELETED:
        return []
    if state is None and not snapshot.deleting:
        return []  # DWS has not reconciled it yet: its first status is an event of its own
    if snapshot.active(WorkflowState.TEARDOWN):
        return TRANSITIONS[WorkflowState.TEARDOWN](snapshot, job, now, settings) + errors.advance(
            snapshot, job, now, settings
        )
    # deleted by hand (flux-coral2 #466): the job cannot go on. Deleted before DWS ever
    # reconciled it, it never will be (DWS leaves a deleting Workflow without its
    # finalizer alone), so no state comes: Flux's finalizer is let go all the same
    if snapshot.deleting:
        if job.teardown == Teardown.NOT_ASKED:
            return deleted_by_hand(snapshot, job, settings)
        return [RemoveFinalizer()]  # a Teardown asked will never come: let it go
    if job.teardown == Teardown.ASKED:
        return []
    actions: list[Action] = []
    if state is not None and snapshot.complete(state):
        actions = TRANSITIONS[state](snapshot, job, now, settings)
    return actions + errors.advance(snapshot, job, now, settings)


def deleted_by_hand(snapshot: Snapshot, job: JobRecord, settings: RabbitSettings) -> list[Action]:
    """The Workflow was deleted by someone else while its job used it: the job gets a
    fatal exception saying so, what flux-coral2 saves of a Workflow is saved, and Flux's
    finalizer is dropped. A Workflow being deleted makes no more transitions (DWS only
    waits for the other finalizers, and nnf frees the storage whatever the state), so
    no Teardown is asked: the object goes, and the job ends as a Workflow that is gone
    (``dws.observe``: its epilog released)."""
    name = snapshot.workflow.get("metadata", {}).get("name", workflow_name(job.jobid))
    note = (
        f"DWS workflow interactions failed: workflow {name} was deleted "
        "(metadata.deletionTimestamp set) while the job used it"
    )
    saved = [a for a in data_out.move_to_teardown(snapshot, job, settings) if not is_transition(a)]
    return [
        exception(job.jobid, "exception", 0, note, "exception:workflow-deleted"),
        *saved,
        RemoveFinalizer(),
    ]


def is_transition(action: Action) -> bool:
    """Whether ``action`` asks the Workflow for a state."""
    return isinstance(action, PatchDesiredState)
