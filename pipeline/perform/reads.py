"""What the health decisions read from DWS: which computes did not mount or unmount, and
which rabbits still hold an allocation of a job."""

from __future__ import annotations

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.workflow import WORKFLOW_LABEL

__all__ = ["WORKFLOW_LABEL", "clientmounts_not_in_state", "rabbits_with_allocations"]


def clientmounts_not_in_state(dws: DwsClient, name: str, desired: str) -> list[str]:
    """Compute nodes whose ClientMounts of Workflow ``name`` are not ``desired``."""
    try:
        items, _ = dws.list_objects(
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


def rabbits_with_allocations(dws: DwsClient, name: str) -> list[str]:
    """Rabbits on which Workflow ``name``'s Servers still hold an allocation."""
    servers, _ = dws.list_objects("servers", selector=f"{WORKFLOW_LABEL}={name}")
    return sorted(
        {
            rabbit
            for server in servers
            for aset in (server.get("status") or {}).get("allocationSets") or []
            for rabbit, entry in (aset.get("storage") or {}).items()
            if int((entry or {}).get("allocationSize") or 0) > 0
        }
    )


def rabbits_not_ready(dws: DwsClient, name: str) -> set[str]:
    """Rabbits on which Workflow ``name``'s Servers' storage is not ready yet."""
    servers, _ = dws.list_objects("servers", selector=f"{WORKFLOW_LABEL}={name}")
    return {
        rabbit
        for server in servers
        for aset in (server.get("status") or {}).get("allocationSets") or []
        for rabbit, entry in (aset.get("storage") or {}).items()
        if not (entry or {}).get("ready")
    }
