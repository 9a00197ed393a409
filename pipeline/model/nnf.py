"""How nnf-sos turns a ``#DW`` directive into a DirectiveBreakdown.

Pure arithmetic over a storage profile; used by the simulated DWS
controller and the demo, and handy for admins predicting what a directive
will ask of the scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.model.directives import CreatePersistent, Directive, JobDW, PersistentDW

RABBIT_LABEL = "dataworkflowservices.github.io/storage=Rabbit"
MIB = 2**20
GIB = 2**30


@dataclass(frozen=True)
class StorageProfile:
    """The parts of an NnfStorageProfile that shape breakdowns (the shipped template)."""

    capacity_scaling: float = 1.0
    allocation_padding: int = 300 * MIB
    ost_scale: int | None = 5
    ost_count: int | None = None
    ost_colocate_computes: bool = True
    combined_mgt_mdt: bool = True
    mdt_capacity: int = 5 * GIB
    mgt_mdt_count: int = 1
    mdt_count: int = 1
    external_mgs: bool = False


TEMPLATE = StorageProfile()


def _servers_ref(name: str, namespace: str) -> dict[str, str]:
    return {"kind": "Servers", "name": name, "namespace": namespace}


def _location(access: list[tuple[str, str]], ref: dict[str, str], index: int) -> dict[str, Any]:
    return {
        "access": [{"type": t, "priority": p} for t, p in access],
        "reference": {**ref, "fieldPath": f"servers.spec.allocationSets[{index}]"},
    }


def _allocation_sets(fs_type: str, capacity: int, profile: StorageProfile) -> list[dict[str, Any]]:
    labels = {"labels": [RABBIT_LABEL]}
    if fs_type in ("xfs", "gfs2", "raw"):
        size = int(capacity * profile.capacity_scaling) + profile.allocation_padding
        return [
            {
                "allocationStrategy": "AllocatePerCompute",
                "minimumCapacity": size,
                "label": fs_type,
                "constraints": dict(labels),
            }
        ]
    ost_constraints: dict[str, Any] = dict(labels)
    if profile.ost_scale is not None:
        ost_constraints["scale"] = profile.ost_scale
    if profile.ost_count is not None:
        ost_constraints["count"] = profile.ost_count
    sets = [
        {
            "allocationStrategy": "AllocateAcrossServers",
            "minimumCapacity": int(capacity * profile.capacity_scaling),
            "label": "ost",
            "constraints": ost_constraints,
        }
    ]
    mgt_colocation = [{"type": "exclusive", "key": "lustre-mgt"}]
    if profile.external_mgs:
        sets.append(
            {
                "allocationStrategy": "AllocateAcrossServers",
                "minimumCapacity": profile.mdt_capacity,
                "label": "mdt",
                "constraints": {**labels, "count": profile.mdt_count},
            }
        )
    elif profile.combined_mgt_mdt:
        sets.append(
            {
                "allocationStrategy": "AllocateAcrossServers",
                "minimumCapacity": profile.mdt_capacity,
                "label": "mgtmdt",
                "constraints": {
                    **labels,
                    "count": profile.mgt_mdt_count,
                    "colocation": mgt_colocation,
                },
            }
        )
    else:
        sets.append(
            {
                "allocationStrategy": "AllocateAcrossServers",
                "minimumCapacity": profile.mdt_capacity,
                "label": "mdt",
                "constraints": {**labels, "count": profile.mdt_count},
            }
        )
        sets.append(
            {
                "allocationStrategy": "AllocateSingleServer",
                "minimumCapacity": profile.mdt_capacity,
                "label": "mgt",
                "constraints": {**labels, "count": 1, "colocation": mgt_colocation},
            }
        )
    return sets


def _access_for(fs_type: str, set_label: str, profile: StorageProfile) -> list[tuple[str, str]]:
    if fs_type in ("xfs", "raw"):
        return [("physical", "mandatory")]
    if fs_type == "gfs2":
        return [("network", "mandatory"), ("physical", "mandatory")]
    if set_label == "ost" and profile.ost_colocate_computes:
        return [("network", "mandatory"), ("physical", "bestEffort")]
    return [("network", "mandatory")]


def breakdown_for(
    directive: Directive,
    *,
    workflow: str,
    index: int,
    userid: int,
    namespace: str = "default",
    profile: StorageProfile = TEMPLATE,
    ready: bool = True,
) -> dict[str, Any] | None:
    """Return the DirectiveBreakdown nnf makes for ``directive``, or None if it makes none."""
    name = f"{workflow}-{index}"
    status: dict[str, Any] = {"ready": ready}
    if isinstance(directive, JobDW | CreatePersistent):
        capacity = directive.capacity or 0
        sets = _allocation_sets(directive.fs_type, capacity, profile)
        persistent = isinstance(directive, CreatePersistent)
        ref = _servers_ref(directive.name if persistent else name, namespace)
        status["storage"] = {
            "lifetime": "persistent" if persistent else "job",
            "reference": ref,
            "allocationSets": sets,
        }
        if not persistent:
            status["compute"] = {
                "constraints": {
                    "location": [
                        _location(_access_for(directive.fs_type, s["label"], profile), ref, i)
                        for i, s in enumerate(sets)
                    ]
                }
            }
    elif isinstance(directive, PersistentDW):
        ref = _servers_ref(directive.name, namespace)
        status["compute"] = {
            "constraints": {"location": [_location([("physical", "mandatory")], ref, 0)]}
        }
    else:
        return None
    if directive.requires:
        status["requires"] = list(directive.requires)
    return {
        "apiVersion": "dataworkflowservices.github.io/v1alpha7",
        "kind": "DirectiveBreakdown",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "dataworkflowservices.github.io/workflow.name": workflow,
                "dataworkflowservices.github.io/workflow.namespace": namespace,
                "nnf.cray.hpe.com/directive_index": str(index),
            },
        },
        "spec": {"directive": directive.line, "userID": userid},
        "status": status,
    }
