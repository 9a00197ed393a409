"""What the decisions read from DWS in more than one call: which computes did not mount or
unmount, which rabbits still hold an allocation of a job, and which rabbit each compute
is really behind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.breakdown import MGT_LABELS
from pipeline.model.workflow import WORKFLOW_LABEL
from pipeline.states.persistent import PersistentOwner, PersistentPlacement

__all__ = [
    "WORKFLOW_LABEL",
    "clientmounts_not_in_state",
    "persistent_owners",
    "persistent_placements",
    "rabbits_listing",
    "rabbits_not_in_state",
    "rabbits_serving_mgts",
    "rabbits_with_allocations",
]


def clientmounts_not_in_state(dws: DwsClient, name: str, desired: str) -> list[str]:
    """Compute nodes whose ClientMounts of Workflow ``name`` (``…-computes``) are not
    ``desired``; one with no status yet is not. The rabbits' own ClientMounts
    (``…-servers``, which nnf makes for gfs2, lustre, raw and data movement) are never
    among them: a rabbit is not a compute to drain (:func:`rabbits_not_in_state`)."""
    return _not_in_state(dws, name, desired, "-computes")


def rabbits_not_in_state(dws: DwsClient, name: str, desired: str) -> list[str]:
    """Rabbits whose own ClientMounts of Workflow ``name`` (``…-servers``) are not
    ``desired``; one with no status yet (its nnf-node-manager down) is not."""
    return _not_in_state(dws, name, desired, "-servers")


def _not_in_state(dws: DwsClient, name: str, desired: str, suffix: str) -> list[str]:
    try:
        items, _ = dws.list_objects(
            "clientmounts", selector=f"{WORKFLOW_LABEL}={name}", all_namespaces=True
        )
    except NotFound:
        return []
    bad: list[str] = []
    for item in items:
        node = (item.get("spec") or {}).get("node")
        meta_name = str((item.get("metadata") or {}).get("name") or "")
        if not node or not meta_name.endswith(suffix):
            continue
        mounts = (item.get("status") or {}).get("mounts")
        if mounts is None or any(m.get("state") != desired or not m.get("ready") for m in mounts):
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


def _listed(storage: Mapping[str, Any]) -> list[str]:
    access = (storage.get("status") or {}).get("access") or {}
    return [str(c["name"]) for c in access.get("computes") or [] if c.get("name")]


def rabbits_listing(
    dws: DwsClient, rabbits: Iterable[str], computes: Iterable[str]
) -> dict[str, str | None]:
    """The rabbit whose Storage lists each of ``computes`` in ``status.access.computes``
    (the PCIe topology nnf hands allocations out by), None for a compute no Storage lists.
    The Storages of ``rabbits`` (where the rabbitmapping puts the computes) are read one
    by one; every Storage is listed only when those leave a compute unfound."""
    order = list(dict.fromkeys(computes))
    wanted = set(order)
    found: dict[str, str] = {}
    for rabbit in dict.fromkeys(rabbits):
        try:
            storage = dws.get("storages", rabbit)
        except NotFound:
            continue
        found.update((c, rabbit) for c in _listed(storage) if c in wanted)
    if len(found) < len(wanted):
        storages, _ = dws.list_objects("storages")
        for storage in storages:
            rabbit = str((storage.get("metadata") or {}).get("name"))
            found.update((c, rabbit) for c in _listed(storage) if c in wanted and c not in found)
    return {c: found.get(c) for c in order}


#: nnf-sos's annotation that lets any user use a persistent storage instance
#: (``PersistentStorageIgnoreUIDAnnotation``)
IGNORE_UID = "dataworkflowservices.github.io/ignore-uid"
#: The owner label DWS puts on a child object (``AddOwnerLabels``): on a persistent
#: storage instance, the Workflow of the job that created it, until its Teardown.
OWNER_NAME_LABEL = "dataworkflowservices.github.io/owner.name"


def rabbits_serving_mgts(dws: DwsClient, own: Iterable[str]) -> dict[str, str]:
    """Each rabbit that holds a Lustre MGT of another file system than the Servers
    ``own`` (a job's, or a persistent instance's), and that Servers' name: nnf-sos makes
    an NnfLustreMGT for each MGT at its rabbit's LNet address and refuses a second one
    there ("multiple MGTs found for address", ``nnf_storage_controller.go``)."""
    mine = set(own)
    held: dict[str, str] = {}
    for servers in dws.list_objects("servers")[0]:
        name = str((servers.get("metadata") or {}).get("name") or "")
        if name in mine:
            continue
        for aset in (servers.get("spec") or {}).get("allocationSets") or []:
            if (aset or {}).get("label") in MGT_LABELS:
                for entry in aset.get("storage") or []:
                    held.setdefault(str((entry or {}).get("name") or ""), name)
    return held


def persistent_owners(dws: DwsClient, names: Iterable[str]) -> dict[str, PersistentOwner]:
    """Who owns each existing persistent storage instance of ``names`` (one not found is
    left out: nnf's Proposal says so itself)."""
    owners: dict[str, PersistentOwner] = {}
    for name in dict.fromkeys(names):
        try:
            psi = dws.get("persistentstorageinstances", name)
        except NotFound:
            continue
        annotations = (psi.get("metadata") or {}).get("annotations") or {}
        shared = str(annotations.get(IGNORE_UID, "")).lower() == "true"
        labels = (psi.get("metadata") or {}).get("labels") or {}
        creator = labels.get(OWNER_NAME_LABEL)
        owners[name] = PersistentOwner(
            int((psi.get("spec") or {}).get("userID", -1)),
            shared,
            None if creator is None else str(creator),
        )
    return owners


def persistent_placements(dws: DwsClient, names: Iterable[str]) -> dict[str, PersistentPlacement]:
    """Where each persistent instance of ``names`` keeps its storage: its file system (its
    ``spec.fsType``) and the allocations each rabbit holds (its Servers, named as the
    instance). One not found is left out: nnf's Proposal says so itself."""
    out: dict[str, PersistentPlacement] = {}
    for name in dict.fromkeys(names):
        try:
            psi = dws.get("persistentstorageinstances", name)
            servers = dws.get("servers", name)
        except NotFound:
            continue
        held: dict[str, int] = {}
        for aset in (servers.get("spec") or {}).get("allocationSets") or []:
            for entry in (aset or {}).get("storage") or []:
                rabbit = str(entry.get("name") or "")
                held[rabbit] = held.get(rabbit, 0) + int(entry.get("allocationCount") or 0)
        fs_type = str((psi.get("spec") or {}).get("fsType") or "")
        out[name] = PersistentPlacement(fs_type, held)
    return out
