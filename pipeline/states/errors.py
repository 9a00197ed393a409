"""Error and TransientCondition handling after every observation."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, ArmDeadline, DisarmDeadline, UpdateJob, exception
from pipeline.states.snapshot import Snapshot


def message_of(status: dict[str, Any]) -> str:
    """The Workflow's ``status.message``, as flux-coral2 quotes it; when nnf gave the error
    no user message (``DW Directive 0: Internal error: ``), the failing entries' own
    errors follow it, so that the job's exception says what went wrong."""
    message = str(status.get("message") or "")
    if not message.rstrip().endswith("error:"):
        return message
    errors = [
        str(entry["error"])
        for entry in status.get("drivers") or []
        if isinstance(entry, dict)
        and entry.get("status") in ("Error", "TransientCondition")
        and entry.get("error")
    ]
    return f"{message.rstrip()} ({'; '.join(errors)})" if errors else message


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Raise the job exception on Error; track TransientCondition against ``tc_timeout``."""
    status = snapshot.status
    state = snapshot.state.value if snapshot.state else ""
    if status.get("status") == "Error":
        note = f"DWS/Rabbit interactions failed: workflow hit an error: {message_of(status)}"
        return [exception(job.jobid, "exception", 0, note, f"exception:error:{state}")]
    if status.get("status") == "TransientCondition":
        message = message_of(status)
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
