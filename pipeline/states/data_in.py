"""DataIn complete: on to PreRun, arming the PreRun timeout."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, ArmDeadline, PatchDesiredState, timing
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Move to PreRun; arm ``prerun_timeout`` when configured."""
    actions: list[Action] = [
        PatchDesiredState("DataIn", "PreRun"),
        *timing(job.jobid, "DataIn", snapshot.workflow),
    ]
    if settings.prerun_timeout > 0:
        actions.append(ArmDeadline("prerun_timeout", now + settings.prerun_timeout))
    return actions
