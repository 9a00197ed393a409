"""DirectiveBreakdown objects as DWS serves them, for the tests."""

from __future__ import annotations

from typing import Any

GIB = 2**30


def aset(label: str, strategy: str, capacity: int, **constraints: Any) -> dict[str, Any]:
    return {
        "allocationStrategy": strategy,
        "minimumCapacity": capacity,
        "label": label,
        "constraints": {"labels": ["dataworkflowservices.github.io/storage=Rabbit"], **constraints},
    }


def breakdown(
    *sets: dict[str, Any], ready: bool = True, kind: str = "DirectiveBreakdown", **status: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"ready": ready, **status}
    if sets:
        body["storage"] = {
            "lifetime": "job",
            "reference": {"kind": "Servers", "name": "fluxjob-1-0", "namespace": "default"},
            "allocationSets": list(sets),
        }
    return {"kind": kind, "metadata": {"name": "fluxjob-1-0"}, "status": body}


def xfs(gib: int) -> dict[str, Any]:
    return breakdown(aset("xfs", "AllocatePerCompute", gib * GIB))


def lustre(ost_bytes: int, mdt_bytes: int = 5 * GIB) -> dict[str, Any]:
    return breakdown(
        aset("ost", "AllocateAcrossServers", ost_bytes, scale=5),
        aset(
            "mgtmdt",
            "AllocateAcrossServers",
            mdt_bytes,
            count=1,
            colocation=[{"type": "exclusive", "key": "lustre-mgt"}],
        ),
    )


def node_job(count: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "node",
            "count": count,
            "exclusive": True,
            "with": [
                {
                    "type": "slot",
                    "count": 1,
                    "label": "task",
                    "with": [{"type": "core", "count": 1}],
                }
            ],
        }
    ]
