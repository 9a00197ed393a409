"""Setup complete: on to DataIn, and fill Computes with the job's healthy nodes."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import Action, PatchComputes, PatchDesiredState, timing
from pipeline.states.snapshot import Snapshot


def advance(
    snapshot: Snapshot, job: JobRecord, now: float, settings: RabbitSettings
) -> list[Action]:
    """Patch Computes (without failed nodes), move to DataIn, save the timing."""
    failed = set(job.failed_nodes)
    hosts = tuple(h for h in job.hosts if h not in failed)
    return [
        PatchComputes(hosts),
        PatchDesiredState("Setup", "DataIn"),
        *timing(job.jobid, "Setup", snapshot.workflow),
    ]
