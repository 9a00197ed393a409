"""The cluster-level DWS objects a site has: Storages, SystemConfiguration, SystemStatus.

Built from a rabbitmapping, and the
health changes the simulator can inject: a rabbit going Offline or being
disabled, a compute losing its PCIe link.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from coral2_sim.kube.resources import LUS, NNF
from pipeline.clients.k8s import DWS_GROUP, DwsClient
from pipeline.errors import AlreadyExists
from pipeline.model.rabbitmap import RabbitMapping

RABBIT_LABEL = ("dataworkflowservices.github.io/storage", "Rabbit")


#: Where nnf-sos looks for storage profiles (its ``NNF_STORAGE_PROFILE_NAMESPACE``, as
#: nnf-deploy sets it).
PROFILE_NAMESPACE = "nnf-system"


def storage_profile(name: str, *, default: bool = True) -> dict[str, Any]:
    """An NnfStorageProfile ``name``; ``default``: the one a directive naming none gets."""
    return {
        "apiVersion": f"{NNF}/v1alpha11",
        "kind": "NnfStorageProfile",
        "metadata": {"name": name, "namespace": PROFILE_NAMESPACE},
        "data": {"default": default, "pinned": False},
    }


def storage_object(rabbit: str) -> dict[str, Any]:
    """Return a Ready Storage for ``rabbit``."""
    return {
        "apiVersion": f"{DWS_GROUP}/v1alpha7",
        "kind": "Storage",
        "metadata": {"name": rabbit, "labels": {RABBIT_LABEL[0]: RABBIT_LABEL[1]}},
        "spec": {"state": "Enabled", "mode": "Live"},
    }


#: Drives per rabbit, as nnf-sos reports them in ``status.devices``.
DRIVES = 16


def storage_status(rabbit: str, capacity: int, computes: list[str]) -> dict[str, Any]:
    """Return the status of a healthy rabbit with ``computes`` on PCIe: ``capacity`` free
    (``status.capacity``, which nnf-sos keeps as the space not allocated) on
    :data:`DRIVES` drives whose ``capacity`` adds up to it (none allocated yet)."""
    share, rest = divmod(capacity, DRIVES)
    devices = [
        {
            "slot": str(slot + 1),
            "model": "KIOXIA KCM7DRJE3T84",
            "serialNumber": f"{rabbit}-{slot + 1:02d}",
            "firmwareVersion": "1TCRS104",
            "capacity": share + (rest if slot == 0 else 0),
            "wearLevel": 2,
            "status": "Ready",
        }
        for slot in range(DRIVES)
    ]
    return {
        "type": "NVMe",
        "capacity": capacity,
        "devices": devices,
        "status": "Ready",
        "message": "",
        "rebootRequired": False,
        "access": {
            "protocol": "PCIe",
            "servers": [{"name": rabbit, "status": "Ready"}],
            "computes": [{"name": c, "status": "Ready"} for c in computes],
        },
    }


#: The global Lustre file system of the simulated site: copies to and from it are allowed.
GLOBAL_LUSTRE = "/lus/global"


def lustre_filesystem(name: str, mount_root: str) -> dict[str, Any]:
    """A LustreFileSystem (lustre-fs-operator's ``lus.cray.hpe.com/v1beta1``), as a site
    declares each global Lustre file system nnf may copy to and from."""
    return {
        "apiVersion": f"{LUS}/v1beta1",
        "kind": "LustreFileSystem",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"name": name, "mgsNids": "10.1.1.1@tcp", "mountRoot": mount_root},
    }


def install_cluster(
    dws: DwsClient,
    mapping: RabbitMapping,
    *,
    systemstatus: bool = True,
    lustre_roots: tuple[str, ...] = (GLOBAL_LUSTRE,),
    user_container_tls: bool = True,
) -> None:
    """Create the Storages, SystemConfiguration and SystemStatus of ``mapping``, and a
    LustreFileSystem per mount root of ``lustre_roots`` (idempotent).

    ``systemstatus=False``: no SystemStatus ``default``, as on a site whose install did not
    make one — neither dws nor nnf-sos creates it (only their samples do).
    ``user_container_tls=False``: no user container TLS Secret, as a site that did not set
    copy offload up, where nnf refuses ``requires=`` in Proposal."""
    if user_container_tls:  # the site set copy offload up (nnf-sos's copy-offload docs)
        with suppress(ApiException):  # 409: made before
            tls = client.V1Secret(
                metadata=client.V1ObjectMeta(name="nnf-dm-usercontainer-server-tls"),
                type="kubernetes.io/tls",
                data={"tls.crt": "", "tls.key": ""},
            )
            dws.core.create_namespaced_secret("default", tls)
    with suppress(ApiException):  # 409: made before
        dws.custom.create_namespaced_custom_object(
            NNF, "v1alpha11", PROFILE_NAMESPACE, "nnfstorageprofiles", storage_profile("default")
        )
    for index, root in enumerate(lustre_roots):
        with suppress(ApiException):  # 409: made before
            dws.custom.create_namespaced_custom_object(
                LUS, "v1beta1", "default", "lustrefilesystems",
                lustre_filesystem(f"lustre{index}" if index else "global", root),
            )  # fmt: skip
    for rabbit, entry in mapping.rabbits.items():
        computes = mapping.computes_of(rabbit)
        with suppress(AlreadyExists):
            dws.create("storages", storage_object(rabbit))
        dws.patch(
            "storages",
            rabbit,
            {"status": storage_status(rabbit, entry.capacity, computes)},
            status=True,
        )
    config = {
        "apiVersion": f"{DWS_GROUP}/v1alpha7",
        "kind": "SystemConfiguration",
        "metadata": {"name": "default"},
        "spec": {
            "storageNodes": [
                {
                    "type": "Rabbit",
                    "name": rabbit,
                    "computesAccess": [
                        {"name": c, "index": i} for i, c in enumerate(mapping.computes_of(rabbit))
                    ],
                }
                for rabbit in mapping.rabbits
            ],
            "externalComputeNodes": [],
            "ports": [],
            "portsCooldownInSeconds": 60,
        },
    }
    status = {
        "apiVersion": f"{DWS_GROUP}/v1alpha7",
        "kind": "SystemStatus",
        "metadata": {"name": "default"},
        "data": {"nodes": {}},
    }
    made = [("systemconfigurations", config)]
    if systemstatus:
        made.append(("systemstatuses", status))
    for plural, body in made:
        with suppress(AlreadyExists):
            dws.create(plural, body)


def set_rabbit_status(dws: DwsClient, rabbit: str, status: str, message: str = "") -> None:
    """Inject a rabbit health change: ``Offline``, ``Degraded``, ``Ready`` …"""
    if not message and status == "Offline":
        message = "Kubernetes node is offline"
    dws.patch("storages", rabbit, {"status": {"status": status, "message": message}}, status=True)


def set_compute_access(dws: DwsClient, rabbit: str, compute: str, status: str) -> None:
    """Inject a per-compute PCIe status on a Storage: ``Offline``, ``Fenced``, ``Ready``."""
    storage = dws.get("storages", rabbit)
    access = storage.get("status", {}).get("access", {})
    computes = [
        {**c, "status": status} if c.get("name") == compute else c
        for c in access.get("computes", [])
    ]
    dws.patch(
        "storages", rabbit, {"status": {"access": {**access, "computes": computes}}}, status=True
    )


def move_compute(dws: DwsClient, compute: str, to_rabbit: str) -> None:
    """Inject a topology the rabbitmapping does not know: ``compute`` listed (PCIe) in
    ``to_rabbit``'s Storage and no longer in any other's — as after recabling, or with a
    rabbitmapping built from an older SystemConfiguration."""
    storages, _ = dws.list_objects("storages")
    for storage in storages:
        rabbit = storage["metadata"]["name"]
        access = (storage.get("status") or {}).get("access") or {}
        computes = [c for c in access.get("computes") or [] if c.get("name") != compute]
        if rabbit == to_rabbit:
            computes.append({"name": compute, "status": "Ready"})
        if computes != (access.get("computes") or []):
            dws.patch(
                "storages",
                rabbit,
                {"status": {"access": {**access, "computes": computes}}},
                status=True,
            )
