"""CXI services on a node's Cassini NICs: what a NIC backend offers, and the job's services.

A backend (:class:`Nic`) lists the node's devices with their resource
totals and services, allocates a service from a :class:`ServiceRequest`
and destroys one. Two implement it: ``node_worker.cxi_cli.CxiServiceCli``
(the ``cxi_service`` command of libcxi, on a real node) and the simulated
Cassini NIC of the simulated system (``coral2_sim.node.cassini``).

:func:`create_job_services` and :func:`destroy_job_services` are what the
node prolog and epilog do for a job, as ``flux slingshot prolog`` and
``epilog`` do it: one service per NIC restricted to the job's user, its
VNIs and the BEST_EFFORT and LOW_LATENCY traffic classes, with the HPE
limits scaled by the node's cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pipeline.errors import CxiBusy, CxiError, CxiNoSpace
from pipeline.model.slingshot import BEST_EFFORT, JOB_TCS, LOW_LATENCY, service_limits

__all__ = [
    "BEST_EFFORT",
    "LOW_LATENCY",
    "Created",
    "CxiBusy",
    "CxiError",
    "CxiNoSpace",
    "Device",
    "Nic",
    "Service",
    "ServiceRequest",
    "clean_services",
    "create_job_services",
    "destroy_job_services",
    "env_devices",
    "free_resources",
    "job_service",
]


@dataclass(frozen=True)
class Service:
    """One CXI service as the NIC reports it."""

    id: int
    enabled: bool = True
    system: bool = False
    uids: tuple[int, ...] = ()  # empty: every user may use it
    vnis: tuple[int, ...] = ()
    tcs: int = 0xF
    limits: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # (max, reserved)

    def as_env_service(self) -> dict[str, object]:
        """The service as ``pipeline.model.slingshot.job_environment`` reads it."""
        return {
            "id": self.id,
            "enabled": self.enabled,
            "system": self.system,
            "vnis": list(self.vnis),
            "tcs": self.tcs,
        }


@dataclass(frozen=True)
class Device:
    """One CXI device (``cxi0`` …) with its resource totals and its services."""

    name: str
    totals: Mapping[str, int]
    services: tuple[Service, ...] = ()


def free_resources(totals: Mapping[str, int], services: Iterable[Service]) -> dict[str, int]:
    """What a device has left to reserve: its totals less every service's reservations."""
    used = dict.fromkeys(totals, 0)
    for service in services:
        for resource, (_, reserved) in service.limits.items():
            used[resource] = used.get(resource, 0) + reserved
    return {r: totals[r] - used[r] for r in totals}


@dataclass(frozen=True)
class ServiceRequest:
    """What a job's service asks of one NIC."""

    uid: int
    vnis: tuple[int, ...]
    limits: Mapping[str, tuple[int, int]]
    tcs: int = JOB_TCS


class Nic(Protocol):
    """A node's CXI devices."""

    def devices(self) -> list[Device]:
        """Every device, with its totals and services."""

    def allocate(self, device: str, request: ServiceRequest) -> int:
        """Allocate a service on ``device``; return its id. CxiNoSpace (with what is
        available) when the device cannot give the reservation, CxiError otherwise."""

    def destroy(self, device: str, service_id: int) -> None:
        """Destroy service ``service_id`` on ``device``; CxiBusy while it is in use."""


def job_service(device: Device, uid: int, vnis: Sequence[int]) -> Service | None:
    """The job's service on ``device``: not a system service, restricted to ``uid``
    first, with exactly ``vnis`` in order (as ``flux slingshot epilog`` finds it)."""
    for service in device.services:
        if (
            not service.system
            and service.uids[:1] == (uid,)
            and list(service.vnis) == list(vnis)
            and service.id != 1
        ):
            return service
    return None


@dataclass
class Created:
    """What the prolog did on one node: each device's service id and the warnings."""

    services: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def create_job_services(nic: Nic, uid: int, vnis: Sequence[int], ncores: int) -> Created:
    """Give the job a service on every device (an existing one is reused: a repeated
    prolog). A device short of resources gets what it has left, with a warning; only
    when it cannot give even one core's worth does this raise CxiNoSpace."""
    done = Created()
    for device in nic.devices():
        existing = job_service(device, uid, vnis)
        if existing is not None:
            done.services[device.name] = existing.id
            continue
        limits = service_limits(ncores, device.totals)
        request = ServiceRequest(uid, tuple(vnis), limits)
        try:
            done.services[device.name] = nic.allocate(device.name, request)
            continue
        except CxiNoSpace as short:
            scaled = _scaled_back(limits, short.available, service_limits(1, device.totals))
            if scaled is None:  # as flux slingshot prolog names it: the device, the call
                raise CxiNoSpace(
                    f"{device.name}: cxil_alloc_svc: {short}", short.available
                ) from short
            for resource, (_, wanted) in limits.items():
                if scaled[resource][1] < wanted:
                    done.warnings.append(
                        f"{device.name}: cannot reserve {wanted} {resource.upper()}: only "
                        f"{scaled[resource][1]} available; reserved what is left"
                    )
            request = ServiceRequest(uid, tuple(vnis), scaled)
            done.services[device.name] = nic.allocate(device.name, request)
    return done


def _scaled_back(
    limits: Mapping[str, tuple[int, int]],
    available: Mapping[str, int],
    minimum: Mapping[str, tuple[int, int]],
) -> dict[str, tuple[int, int]] | None:
    """``limits`` with each reservation cut to what is ``available``; None when that is
    below ``minimum`` (one core's worth) for some resource."""
    scaled: dict[str, tuple[int, int]] = {}
    for resource, (most, wanted) in limits.items():
        have = min(wanted, available.get(resource, wanted))
        if have < minimum[resource][1]:
            return None
        scaled[resource] = (most, have)
    return scaled


def destroy_job_services(
    nic: Nic,
    uid: int,
    vnis: Sequence[int],
    *,
    retry_busy_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Destroy the job's service on every device, retrying busy ones every second for
    ``retry_busy_s``; return the devices whose service is still busy (``[]``: all gone)."""
    deadline = clock() + retry_busy_s
    while True:
        busy: list[str] = []
        for device in nic.devices():
            service = job_service(device, uid, vnis)
            if service is None:
                continue
            try:
                nic.destroy(device.name, service.id)
            except CxiBusy:
                busy.append(f"{device.name} service {service.id}")
        now = clock()
        if not busy or now >= deadline:
            return busy
        sleep(min(1.0, deadline - now))


def clean_services(
    nic: Nic,
    pool: Iterable[int],
    *,
    retry_busy_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[str], list[str]]:
    """Destroy every non-system service that lists a VNI of ``pool``, as ``flux slingshot
    clean`` does, retrying busy ones every second for ``retry_busy_s``; return
    ``(destroyed, busy)`` as ``"<device> service <id>"``."""
    ids = set(pool)
    destroyed: list[str] = []
    deadline = clock() + retry_busy_s
    while True:
        busy: list[str] = []
        for device in nic.devices():
            for service in device.services:
                if service.system or not ids.intersection(service.vnis):
                    continue
                name = f"{device.name} service {service.id}"
                try:
                    nic.destroy(device.name, service.id)
                    destroyed.append(name)
                except CxiBusy:
                    busy.append(name)
        now = clock()
        if not busy or now >= deadline:
            return destroyed, busy
        sleep(min(1.0, deadline - now))


def env_devices(nic: Nic) -> list[dict[str, object]]:
    """The node's devices as ``pipeline.model.slingshot.job_environment`` reads them."""
    return [
        {"name": d.name, "services": [s.as_env_service() for s in d.services]}
        for d in nic.devices()
    ]
