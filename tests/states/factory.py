"""Build Workflow snapshots and job records for the state tests."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.snapshot import Snapshot

NODE_JOB: list[dict[str, Any]] = [
    {
        "type": "node",
        "count": 2,
        "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
    }
]


def snapshot(
    state: str | None,
    *,
    desired: str | None = None,
    ready: bool = True,
    status: str = "Completed",
    message: str = "",
    env: dict[str, str] | None = None,
    elapsed: str | None = "1.5s",
    **extra: Any,
) -> Snapshot:
    body: dict[str, Any] = {"ready": ready, "status": status, "message": message}
    if state is not None:
        body["state"] = state
    if env is not None:
        body["env"] = env
    if elapsed is not None:
        body["elapsedTimeLastState"] = elapsed
    workflow = {
        "metadata": {"name": "fluxjob-42"},
        "spec": {"desiredState": desired or state},
        "status": body,
    }
    return Snapshot(workflow, **extra)


def job(**changes: Any) -> JobRecord:
    return JobRecord(
        jobid=42, resources=NODE_JOB, failure_tolerance=0, hosts=["c1", "c2", "c3"]
    ).model_copy(update=changes)


def settings(**changes: Any) -> RabbitSettings:
    return RabbitSettings.model_validate(changes)


def xfs_breakdown(gib: int, ready: bool = True) -> dict[str, Any]:
    return {
        "kind": "DirectiveBreakdown",
        "metadata": {"name": "fluxjob-42-0"},
        "status": {
            "ready": ready,
            "storage": {
                "allocationSets": [
                    {
                        "allocationStrategy": "AllocatePerCompute",
                        "minimumCapacity": gib * 2**30,
                        "label": "xfs",
                    }
                ]
            },
        },
    }
