"""Node and rabbit health actions shared by the lifecycle tasks and deadlines.

Which computes still hold (or lack) their mounts, draining the ones that
failed to unmount, and disabling rabbits left with an allocation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline.errors import NotFound
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.job import JobRecord
from pipeline.model.workflow import WORKFLOW_LABEL
from pipeline.states.actions import Action, SendOnce
from pipeline.tasks.base import PipelineTask

__all__ = [
    "WORKFLOW_LABEL",
    "clientmounts_not_in_state",
    "disable_rabbits_with_allocations",
    "drain_unmounted",
]


def clientmounts_not_in_state(task: PipelineTask, name: str, desired: str) -> list[str]:
    """Compute nodes whose ClientMounts of ``name`` are not ``desired`` (§3.5's check)."""
    try:
        items, _ = task.dws.list_objects(
            "clientmounts", selector=f"{WORKFLOW_LABEL}={name}", all_namespaces=True
        )
    except NotFound:
        return []
    bad: list[str] = []
    for item in items:
        node = (item.get("spec") or {}).get("node")
        if not node:
            continue
        meta_name = (item.get("metadata") or {}).get("name")
        mounts = (item.get("status") or {}).get("mounts")
        if not meta_name or mounts is None:
            bad.append(node)
            continue
        if not str(meta_name).endswith("-computes"):
            continue
        if any(m.get("state") != desired or not m.get("ready") for m in mounts):
            bad.append(node)
    return bad


def drain_unmounted(task: PipelineTask, record: JobRecord) -> list[Action]:
    """Drain computes whose mounts did not come down; mark them Disabled in SystemStatus."""
    nodes = clientmounts_not_in_state(task, f"fluxjob-{record.jobid}", "unmounted")
    if not nodes:
        return []
    targets = unique_hostlist(nodes)
    disabled: dict[str, Any] = dict.fromkeys(sorted(set(nodes)), "Disabled")
    task.dws.patch_system_status({"data": {"nodes": disabled}})
    drain = {"targets": targets, "mode": "update", "reason": "failed to unmount rabbit"}
    return [SendOnce("drain", drain, f"drain:{targets}")]


def disable_rabbits_with_allocations(task: PipelineTask, record: JobRecord) -> list[str]:
    """Disable every rabbit still holding an allocation of the job (``dws.abort``)."""
    name = f"fluxjob-{record.jobid}"
    servers, _ = task.dws.list_objects("servers", selector=f"{WORKFLOW_LABEL}={name}")
    rabbits = sorted(
        {
            rabbit
            for server in servers
            for aset in (server.get("status") or {}).get("allocationSets") or []
            for rabbit, entry in (aset.get("storage") or {}).items()
            if int((entry or {}).get("allocationSize") or 0) > 0
        }
    )
    for rabbit in rabbits:
        body: dict[str, Any] = {
            "metadata": {
                "annotations": {
                    "disable_reason": (
                        f"workflow {name} timed out with an active allocation on this rabbit"
                    ),
                    "disable_date": str(datetime.now()),
                }
            },
            "spec": {"state": "Disabled"},
        }
        try:
            task.dws.patch_storage(rabbit, body)
        except NotFound:
            continue
    return rabbits
