"""Error and TransientCondition handling after every observation."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, ArmDeadline, DisarmDeadline, UpdateJob, exception
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Raise the job exception on Error; track TransientCondition against ``tc_timeout``."""
    status = snapshot.status
    state = snapshot.state.value if snapshot.state else ""
    if status.get("status") == "Error":
        note = (
            f"DWS/Rabbit interactions failed: workflow hit an error: {status.get('message') or ''}"
        )
        return [exception(job.jobid, "exception", 0, note, f"exception:error:{state}")]
    if status.get("status") == "TransientCondition":
        message = str(status.get("message") or "")
        prerun = state == "PreRun"
        if job.tc_since is None:
            return [  # armed before it is recorded: a re-run that finds it recorded arms none
                ArmDeadline(DeadlineKind.TC, settings.tc_timeout, "tc"),
                UpdateJob({"tc_since": now, "tc_message": message, "tc_prerun": prerun}),
            ]
        if (job.tc_message, job.tc_prerun) != (message, prerun):
            return [UpdateJob({"tc_message": message, "tc_prerun": prerun})]
        return []
    if job.tc_since is not None:
        return [
            DisarmDeadline(DeadlineKind.TC),
            UpdateJob({"tc_since": None, "tc_message": "", "tc_prerun": False}),
        ]
    return []
