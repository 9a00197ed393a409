"""DataIn complete: on to PreRun, arming the PreRun timeout."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, ArmDeadline, PatchDesiredState, timing
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Move to PreRun; arm ``prerun_timeout`` when configured."""
    actions: list[Action] = []
    if settings.prerun_timeout > 0:  # armed first: once the patch is in, no re-run arms it
        actions.append(ArmDeadline(DeadlineKind.PRERUN, settings.prerun_timeout, "pre_run"))
    return [
        *actions,
        PatchDesiredState("DataIn", "PreRun"),
        *timing(job.jobid, "DataIn", snapshot.workflow),
    ]
