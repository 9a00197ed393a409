"""Build the rabbitmapping from DWS objects, as ``flux rabbitmapping`` does.

1. SystemConfiguration ``default``: every storage node is a rabbit whose
   hostlist is the unique hostlist of its ``computesAccess``; each compute maps
   to it. A compute under two rabbits is an error.
2. Storages: every compute a Storage lists in ``status.access.computes`` must
   map to that rabbit. A rabbit's total capacity is the sum of its drives'
   ``status.devices[].capacity``, as flux-coral2 computes it since its #497 and
   #501 (``status.capacity`` is the space nnf-sos has not allocated, not the
   total); a Storage that lists no drive capacity gives ``status.capacity`` (0 or
   missing: the largest seen so far). Rabbits left without a capacity get the
   largest of all. When the drives' total, less what every Server holds on the
   rabbit, is not ``status.capacity``, one warning line says so, and the drives'
   total is used.
   With ``from_storages``, the Storages are the truth instead: each rabbit's hostlist
   is what its Storage lists (the PCIe topology nnf hands allocations out by), and
   where SystemConfiguration says otherwise, one warning line per compute says so.
3. Unless told to ignore them, Servers not made by Flux (not ``fluxjob-*``)
   hold ``allocationSize * allocationCount`` on their rabbits: subtracted,
   floored at 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pipeline.errors import RabbitMappingError
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.workflow import is_ours


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
    from_storages: bool = False,
    warn: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """The rabbitmapping document (``{"computes": …, "rabbits": …}``); ``warn`` gets each
    warning, one line."""
    servers = list(servers)
    storages = list(storages)
    if from_storages:
        system_configuration = _as_storages_say(system_configuration, storages, warn)
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
            seen = _total(status) or int(status.get("capacity") or 0)
            largest = max(largest, seen)
            capacity[rabbit] = seen or largest
        _check_free(rabbit, status, servers, warn)
    for rabbit in hostlists:
        if not capacity.get(rabbit):
            capacity[rabbit] = largest
    if not ignore_external_allocations:
        for server in servers:
            if is_ours(str((server.get("metadata") or {}).get("name", ""))):
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


def _as_storages_say(
    system_configuration: Mapping[str, Any],
    storages: list[Mapping[str, Any]],
    warn: Callable[[str], None],
) -> dict[str, Any]:
    """``system_configuration`` with each rabbit's ``computesAccess`` replaced by what its
    Storage lists; a warning line for each compute the two place differently."""
    listed: dict[str, list[str]] = {}
    for storage in storages:
        rabbit = str((storage.get("metadata") or {}).get("name") or "")
        names = _items(storage.get("status") or {}, "access", "computes")
        listed[rabbit] = [str(c["name"]) for c in names if c.get("name")]
    placed = {c: r for r, names in listed.items() for c in names}
    nodes = []
    for node in _items(system_configuration, "spec", "storageNodes"):
        rabbit = str(node.get("name") or "")
        for entry in _items(node, "computesAccess"):
            compute = str(entry.get("name") or "")
            if compute and placed.get(compute) != rabbit:
                where = placed.get(compute)
                lists = "no Storage lists it" if where is None else f"{where}'s Storage lists it"
                warn(
                    f"compute {compute}: SystemConfiguration puts it behind {rabbit}, "
                    f"{lists}; using the Storages"
                )
        access = [{"name": c, "index": i} for i, c in enumerate(listed.get(rabbit, []))]
        nodes.append({**node, "computesAccess": access})
    return {
        **system_configuration,
        "spec": {**(system_configuration.get("spec") or {}), "storageNodes": nodes},
    }


def _total(status: Mapping[str, Any]) -> int:
    """The sum of the drives' capacities (0: no drive lists one)."""
    return sum(int(d.get("capacity") or 0) for d in _items(status, "devices"))


def _held(servers: Iterable[Mapping[str, Any]], rabbit: str) -> int:
    """What every Server (Flux's and others') holds on ``rabbit``."""
    held = 0
    for server in servers:
        for aset in _items(server, "spec", "allocationSets"):
            size = int(aset.get("allocationSize") or 0)
            for entry in _items(aset, "storage"):
                if str(entry.get("name") or "") == rabbit:
                    held += size * int(entry.get("allocationCount") or 1)
    return held


#: How far the drives' total less the allocations may be from ``status.capacity``
#: before it is worth a warning (filesystem and LVM overhead).
SLACK = 0.01


def _check_free(
    rabbit: str,
    status: Mapping[str, Any],
    servers: Iterable[Mapping[str, Any]],
    warn: Callable[[str], None],
) -> None:
    total, free = _total(status), int(status.get("capacity") or 0)
    if not total or not free:
        return
    held = _held(servers, rabbit)
    if abs(total - held - free) > SLACK * total:
        tib = 2**40
        warn(
            f"rabbit {rabbit}: its drives add up to {total / tib:.2f} TiB and Servers hold "
            f"{held / tib:.2f} TiB, but status.capacity says {free / tib:.2f} TiB free; "
            "using the drives' total"
        )
