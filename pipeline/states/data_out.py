"""DataOut complete: move to Teardown, saving what flux-coral2 saves."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import JobRecord, Teardown
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, MarkDone, PatchDesiredState, kvs_put, timing
from pipeline.states.snapshot import Snapshot


def datamovements(snapshot: Snapshot, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` nnfdatamovements, failed ones first (``rabbit_datamovements``)."""
    if limit <= 0:
        return []
    failed = [
        d for d in snapshot.datamovements if (d.get("status") or {}).get("status") == "Failed"
    ]
    others = [d for d in snapshot.datamovements if d not in failed]
    return (failed + others)[:limit]


def move_to_teardown(snapshot: Snapshot, job: JobRecord, settings: RabbitSettings) -> list[Action]:
    """``move_to_teardown``: save workflow, timing and datamovements, ask for Teardown."""
    state = snapshot.state.value if snapshot.state else "Proposal"
    return [
        kvs_put(job.jobid, "rabbit_workflow", snapshot.workflow),
        *timing(job.jobid, state, snapshot.workflow),
        kvs_put(
            job.jobid, "rabbit_datamovements", datamovements(snapshot, settings.save_datamovements)
        ),
        PatchDesiredState(None, "Teardown"),
        MarkDone({"teardown": Teardown.ASKED}),
    ]


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Move to Teardown."""
    return move_to_teardown(snapshot, job, settings)
