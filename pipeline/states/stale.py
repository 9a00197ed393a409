"""Stale ``fluxjob-*`` Workflows: ones whose job Flux no longer runs.

coral2_dws has no garbage collector for them: a Workflow whose job ended
while nothing drove it (a lost Teardown, a service down at the wrong time,
a Workflow of a job Flux never ran) keeps its rabbit allocation forever.
The stale sweep asks each such Workflow for Teardown and deletes it once
Teardown is done (dropping Flux's finalizer, which nothing else will).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pipeline.model.workflow import k8s_time
from pipeline.states.actions import Action, DeleteWorkflow, FinishJob, PatchDesiredState

TEARDOWN = "Teardown"


class Step(StrEnum):
    """What the sweep does to one Workflow."""

    KEEP = "keep"  # its job runs, or not long enough gone
    TEARDOWN = "teardown"  # ask for Teardown
    WAIT = "wait"  # Teardown asked, not done yet
    DELETE = "delete"  # Teardown done (or the Workflow is being deleted): let it go


def created_at(workflow: Mapping[str, Any]) -> float | None:
    """``metadata.creationTimestamp`` in epoch seconds (None when missing or unreadable)."""
    return k8s_time((workflow.get("metadata") or {}).get("creationTimestamp"))


def stale_since(
    workflow: Mapping[str, Any],
    ended: float | None,
    known: bool,
    synced: float | None,
    tracked: bool,
) -> float | None:
    """Since when ``workflow``'s job has been gone from Flux, or None if it is not.

    ``known``: Flux's journal listed the job (``ended`` is when it became
    INACTIVE, None while active). A job it never listed is gone only if a
    backlog read (``synced``) came after the Workflow was made and the
    pipeline tracks no record of it (``tracked``): the journal may just lag.
    """
    if known:
        return ended
    created = created_at(workflow)
    if tracked or synced is None or created is None or synced <= created:
        return None
    return synced


def step(workflow: Mapping[str, Any], gone_since: float | None, now: float, after_s: float) -> Step:
    """What the sweep does to ``workflow`` whose job is gone since ``gone_since``."""
    if gone_since is None or after_s <= 0 or now - gone_since < after_s:
        return Step.KEEP
    metadata = workflow.get("metadata") or {}
    status = workflow.get("status") or {}
    if metadata.get("deletionTimestamp"):
        return Step.DELETE
    if (workflow.get("spec") or {}).get("desiredState") != TEARDOWN:
        return Step.TEARDOWN
    if status.get("state") == TEARDOWN and status.get("ready"):
        return Step.DELETE
    return Step.WAIT


def on_stale(what: Step) -> list[Action]:
    """The actions of ``what`` (:func:`step`): ask for Teardown from whatever state (a
    Workflow found gone or moved on meanwhile is done), or drop Flux's finalizer and
    delete it (404 is done)."""
    if what is Step.TEARDOWN:
        return [PatchDesiredState(None, TEARDOWN, if_moved_on="continue", if_gone=())]
    if what is Step.DELETE:
        return [DeleteWorkflow()]
    return []


def on_ended(tracked: bool, ended_at: float | None, now: float, after_s: float) -> list[Action]:
    """A job Flux finished ``ended_at``: a record still tracked ``after_s`` later is ended
    (it is kept for ``pipeline.retention``, then dropped)."""
    if not tracked or ended_at is None or not 0 < after_s < now - ended_at:
        return []
    return [FinishJob()]
