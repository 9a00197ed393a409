"""Proposal complete: rewrite the jobspec from the breakdowns and tell Flux."""

from __future__ import annotations

from typing import Any

from pipeline.errors import BreakdownError, BreakdownNotReady
from pipeline.model.breakdown import (
    ResourceLimits,
    apply_breakdowns,
    storages_of,
    summarize_breakdowns,
)
from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, SendOnce, UpdateJob, kvs_put, timing
from pipeline.states.snapshot import Snapshot

NOT_BADRABBIT = {"not": [{"properties": ["badrabbit"]}]}


def exclude_constraint(settings: RabbitSettings) -> dict[str, Any] | None:
    """The constraint keeping jobs off bad rabbits when computes are not drained."""
    return None if settings.drain_compute_nodes else NOT_BADRABBIT


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Send ``resource-update`` (or its ``errmsg``) once; save the workflow and timing."""
    if job.resources is None:
        return []  # the create hook's resources were lost; Flux re-sends on restart
    limits = ResourceLimits(**settings.policy.maximums.model_dump())
    payload: dict[str, Any] = {
        "id": job.jobid,
        "resources": job.resources,
        "exclude": exclude_constraint(settings),
    }
    try:
        summarize_breakdowns(snapshot.breakdowns, allowed_daemons=settings.allowed_daemons)
        resources = apply_breakdowns(snapshot.breakdowns, job.resources, limits=limits)
    except BreakdownNotReady:
        return []
    except BreakdownError as exc:
        payload["errmsg"] = repr(str(exc))
        resources = job.resources
    if resources is None:
        return []  # already applied: the jobspec carries its ssd request
    payload["resources"] = resources
    return [
        # before Flux hears of it: dws.setup reads the breakdowns' storage from the record
        UpdateJob({"storages": storages_of(snapshot.breakdowns)}),
        SendOnce("resource-update", payload, "resource-update"),
        kvs_put(job.jobid, "rabbit_workflow", snapshot.workflow),
        *timing(job.jobid, "Proposal", snapshot.workflow),
    ]
