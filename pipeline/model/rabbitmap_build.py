"""Build the rabbitmapping from DWS objects, as ``flux rabbitmapping`` does.

1. SystemConfiguration ``default``: every storage node is a rabbit whose
   hostlist is the unique hostlist of its ``computesAccess``; each compute maps
   to it. A compute under two rabbits is an error.
2. Storages: every compute a Storage lists in ``status.access.computes`` must
   map to that rabbit; each such compute sets the rabbit's capacity to
   ``status.capacity`` (0 or missing: the largest seen so far). Rabbits left
   without a capacity get the largest of all.
3. Unless told to ignore them, Servers not made by Flux (not ``fluxjob-*``)
   hold ``allocationSize * allocationCount`` on their rabbits: subtracted,
   floored at 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.errors import RabbitMappingError
from pipeline.model.hostlist import unique_hostlist


def _items(obj: Any, *path: str) -> list[Any]:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return list(obj) if isinstance(obj, list) else []


def build_mapping(
    system_configuration: Mapping[str, Any],
    storages: Iterable[Mapping[str, Any]],
    servers: Iterable[Mapping[str, Any]] = (),
    *,
    ignore_external_allocations: bool = False,
) -> dict[str, Any]:
    """The rabbitmapping document (``{"computes": …, "rabbits": …}``)."""
    computes: dict[str, str] = {}
    hostlists: dict[str, list[str]] = {}
    for node in _items(system_configuration, "spec", "storageNodes"):
        rabbit = str(node.get("name") or "")
        if not rabbit:
            raise RabbitMappingError("SystemConfiguration: a storage node has no name")
        names = [str(c["name"]) for c in _items(node, "computesAccess") if c.get("name")]
        for compute in names:
            other = computes.get(compute)
            if other is not None and other != rabbit:
                raise RabbitMappingError(
                    f"Same hostname ({compute}) cannot be associated with both {other} and {rabbit}"
                )
            computes[compute] = rabbit
        hostlists[rabbit] = names
    capacity: dict[str, int] = {}
    largest = 0
    for storage in storages:
        rabbit = str((storage.get("metadata") or {}).get("name") or "")
        status = storage.get("status") or {}
        for compute in _items(status, "access", "computes"):
            name = compute.get("name")
            if not name:
                continue
            if computes.get(name) != rabbit:
                raise RabbitMappingError(
                    f"Mismatch: rabbit {rabbit} claims to be connected to {name} but "
                    f"systemconfiguration gives {computes.get(name)}"
                )
            seen = int(status.get("capacity") or 0)
            largest = max(largest, seen)
            capacity[rabbit] = seen or largest
    for rabbit in hostlists:
        if not capacity.get(rabbit):
            capacity[rabbit] = largest
    if not ignore_external_allocations:
        for server in servers:
            if str((server.get("metadata") or {}).get("name", "")).startswith("fluxjob-"):
                continue
            for aset in _items(server, "spec", "allocationSets"):
                size = int(aset.get("allocationSize") or 0)
                for entry in _items(aset, "storage"):
                    rabbit = str(entry.get("name") or "")
                    if rabbit in capacity:
                        held = size * int(entry.get("allocationCount") or 1)
                        capacity[rabbit] = max(0, capacity[rabbit] - held)
    return {
        "computes": computes,
        "rabbits": {
            rabbit: {"capacity": capacity[rabbit], "hostlist": unique_hostlist(names)}
            for rabbit, names in hostlists.items()
        },
    }
