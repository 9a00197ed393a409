"""Carry out the actions ``pipeline.states`` decided, each one idempotently (DESIGN.md §4)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.errors import Conflict, NotFound
from pipeline.model.job import JobRecord
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    DeleteWorkflow,
    DisarmDeadline,
    PatchComputes,
    PatchDesiredState,
    RemoveFinalizer,
    SendOnce,
    UpdateJob,
)
from pipeline.store import OutboxMessage, Store
from pipeline.tasks import timeouts

log = logging.getLogger("coral2_pipeline.act")


def _updater(changes: dict[str, Any]) -> Callable[[JobRecord], JobRecord]:
    def change(record: JobRecord) -> JobRecord:
        return record.model_copy(update=changes)

    return change


def perform(
    store: Store,
    dws: DwsClient,
    jobid: int,
    actions: Sequence[Action],
    *,
    workflow: dict[str, Any] | None = None,
) -> None:
    """Perform ``actions`` for ``jobid`` in order.

    ``workflow``: the Workflow the actions were decided on, just read; the
    first change to it starts from that copy instead of reading it again
    (resourceVersion-guarded, so a stale copy costs a conflict, not a lost
    update). Later changes read afresh.
    """
    name = f"fluxjob-{jobid}"
    known = workflow
    sends: list[tuple[OutboxMessage, str]] = []  # consecutive SendOnce: one round trip
    for index, action in enumerate(actions):
        if isinstance(action, SendOnce):
            sends.append((OutboxMessage(action.kind, jobid, action.payload), action.mark))
            if index + 1 == len(actions) or not isinstance(actions[index + 1], SendOnce):
                store.outbox.append_all_once(jobid, sends)
                sends = []
            continue
        current = None  # the copy this action may start from: only the first Workflow change's
        if isinstance(action, (PatchDesiredState, RemoveFinalizer, DeleteWorkflow)):
            current, known = known, None
        if isinstance(action, PatchDesiredState):
            try:
                dws.patch_desired_state(
                    name, action.desired, expected_state=action.expected, current=current
                )
            except Conflict as exc:
                log.info("job %s: %s (the workflow moved on)", jobid, exc)
        elif isinstance(action, PatchComputes):
            dws.patch_computes(name, [{"name": h} for h in action.hosts])
        elif isinstance(action, RemoveFinalizer):
            with suppress(NotFound):
                dws.remove_finalizer(name, current=current)
        elif isinstance(action, DeleteWorkflow):
            with suppress(NotFound):
                dws.remove_finalizer(name, current=current)
            dws.delete_workflow(name)
        elif isinstance(action, UpdateJob):
            store.jobs.update(jobid, _updater(action.changes))
        elif isinstance(action, ArmDeadline):
            timeouts.arm(store, jobid, action.kind, action.due, f"{action.kind}@{action.due:.3f}")
        elif isinstance(action, DisarmDeadline):
            timeouts.disarm(store, jobid, action.kind)
        else:  # pragma: no cover - the Action set is closed
            raise TypeError(f"unknown action {action!r}")
