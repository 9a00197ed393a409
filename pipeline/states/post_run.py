"""PostRun complete: on to DataOut."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, DisarmDeadline, PatchDesiredState, timing
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Move to DataOut; the PostRun timeout no longer applies."""
    return [
        PatchDesiredState("PostRun", "DataOut"),
        DisarmDeadline(DeadlineKind.POSTRUN),
        *timing(job.jobid, "PostRun", snapshot.workflow),
    ]
