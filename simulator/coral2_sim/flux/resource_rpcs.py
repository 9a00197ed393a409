"""The RPCs of Flux's resource module and of Fluxion that the pipeline sends, served on
the simulated job manager's endpoint: drains, ssd status, and the scheduler's
properties, each as its Flux service takes it."""

from __future__ import annotations

from typing import Any

from coral2_sim.flux.resource import ResourceService
from coral2_sim.flux.sched import Resources

#: The topics served here.
TOPICS = frozenset(
    {
        "resource.drain",
        "resource.undrain",
        "sched-fluxion-resource.set_property",
        "sched-fluxion-resource.remove_property",
        "sched-fluxion-resource.set_status",
    }
)


def serve(
    resource: ResourceService,
    resources: Resources,
    set_status: dict[str, str],
    topic: str,
    payload: dict[str, Any],
) -> None:
    """Serve ``topic`` (one of :data:`TOPICS`) with ``payload``; ``set_status`` keeps the
    last status set on each resource path."""
    if topic == "resource.drain":
        resource.drain(payload)
    elif topic == "resource.undrain":
        resource.undrain(payload)
    elif topic == "sched-fluxion-resource.set_property":
        key = payload["sp_keyval"].partition("=")[0]
        for host in [resources.host_of_path(p) for p in payload["sp_resource_path"]]:
            resources.properties[host].add(key)
    elif topic == "sched-fluxion-resource.remove_property":
        for host in [resources.host_of_path(p) for p in payload["resource_path"]]:
            resources.properties[host].discard(payload["key"])
    elif topic == "sched-fluxion-resource.set_status":
        set_status[payload["resource_path"]] = payload["status"]
        resource.set_status(payload["resource_path"], payload["status"])
    else:
        raise ValueError(f"{topic} is not a resource RPC")
