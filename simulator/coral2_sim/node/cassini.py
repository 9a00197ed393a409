"""Simulated Cassini NICs: CXI services as the cxi driver keeps them.

The driver's rules that matter to a workload manager: a new service gets
the lowest free id ≥ 1 (id 1 is the default service, VNIs 1 and 10, which
cannot be destroyed); reservations move resources from the shared pool and
a request beyond it is ENOSPC with what is available; a service with TLEs
reserves at least 8 and takes one of 4 TLE pools (the default service holds
one), an LE reservation one of 15 LE pools; a listed VNI of 0 or above
0xffff, more than 4 VNIs, or a max below its reservation or above the
device's is EINVAL; destroying a service still in use is EBUSY. The
simulation keeps a service busy for ``busy_s`` after the job's last use
(the NIC finishing in-flight work), or until :meth:`SimulatedNic.release`;
a service made for a uid of ``busy_uids`` stays busy while that uid has processes left
on the node — a job whose processes outlive it — which the simulation keeps as a file,
``<state>.strays/<uid>``, made with the service, until an admin ends them
(:func:`end_stray_processes`, as ``pkill -u`` would): however slowly anything else
runs, the services stay busy until then.

With ``state``, the NIC keeps its services in that file, as the hardware keeps them
across a restart of the node worker: a worker killed after it made a job's services
finds them there when it starts again (the driver's state outlives any process).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from node_worker.cxi import Device, Service, ServiceRequest, free_resources
from pipeline.errors import CxiBusy, CxiError, CxiNoSpace

#: A Cassini NIC's resource totals, as ``cxi_service list`` shows them.
CASSINI_TOTALS = {
    "acs": 1022,
    "cts": 2047,
    "eqs": 2047,
    "les": 16384,
    "ptes": 2048,
    "tgqs": 512,
    "txqs": 1024,
    "tles": 2048,
}
TLE_POOLS = 4
LE_POOLS = 15  # pool 0 is kept for the default service and services without LEs
DEFAULT_TLES = 512


@dataclass
class _Nic:
    totals: dict[str, int]
    services: dict[int, Service] = field(default_factory=dict)
    busy_until: dict[int, float] = field(default_factory=dict)
    tle_pools: int = TLE_POOLS - 1  # the default service holds one
    le_pools: int = LE_POOLS

    def shared(self) -> dict[str, int]:
        return free_resources(self.totals, self.services.values())


def strays_of(state: Path) -> Path:
    """The folder of the uids with processes left on the node of NIC state file ``state``."""
    return state.with_name(f"{state.stem}.strays")


def end_stray_processes(state: Path) -> list[int]:
    """End every process left on the node whose NICs keep ``state`` (as ``pkill -u``
    would); return the uids that had some."""
    folder = strays_of(state)
    ended = sorted(int(p.name) for p in folder.glob("*") if p.name.isdigit())
    for uid in ended:
        (folder / str(uid)).unlink(missing_ok=True)
    return ended


class SimulatedNic:
    """Every CXI device of one simulated node (``cxi0`` … ``cxi<n-1>``)."""

    def __init__(
        self,
        devices: int = 4,
        *,
        totals: dict[str, int] | None = None,
        busy_s: float = 0.0,
        busy_uids: Collection[int] = (),
        clock: Callable[[], float] = time.monotonic,
        state: Path | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.busy_s = busy_s
        self.busy_uids = frozenset(busy_uids)
        self._strays: set[int] = set()  # without a state file: the uids with processes left
        self._nics: dict[str, _Nic] = {}
        for index in range(devices):
            nic = _Nic(dict(totals or CASSINI_TOTALS))
            default_limits = {r: (t, 0) for r, t in nic.totals.items()}
            default_limits["tles"] = (DEFAULT_TLES, DEFAULT_TLES)
            nic.services[1] = Service(1, enabled=True, vnis=(1, 10), tcs=0xF, limits=default_limits)
            self._nics[f"cxi{index}"] = nic
        self._state = state
        if state is not None and state.exists():
            self._load(state)

    def _load(self, state: Path) -> None:
        saved: dict[str, Any] = json.loads(state.read_text())
        for name, entry in saved.items():
            nic = self._nics.get(name)
            if nic is None:
                continue
            nic.services = {}
            for raw in entry["services"]:
                limits = {r: (int(m), int(v)) for r, (m, v) in raw["limits"].items()}
                service = Service(
                    int(raw["id"]), bool(raw["enabled"]), bool(raw["system"]),
                    tuple(raw["uids"]), tuple(raw["vnis"]), int(raw["tcs"]), limits,
                )  # fmt: skip
                nic.services[service.id] = service
                nic.busy_until[service.id] = 0.0
            nic.tle_pools, nic.le_pools = int(entry["tle_pools"]), int(entry["le_pools"])

    def _stray(self, uid: int) -> None:
        if self._state is None:
            self._strays.add(uid)
            return
        folder = strays_of(self._state)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / str(uid)).touch()

    def _has_strays(self, uid: int) -> bool:
        if self._state is None:
            return uid in self._strays
        return (strays_of(self._state) / str(uid)).exists()

    def end_strays(self) -> None:
        """An admin ended every process left on the node (see :func:`end_stray_processes`)."""
        with self._lock:
            self._strays.clear()
            if self._state is not None:
                end_stray_processes(self._state)

    def _save(self) -> None:
        """Write every device's services (under the lock), atomically."""
        if self._state is None:
            return
        saved = {
            name: {
                "services": [asdict(s) for s in nic.services.values()],
                "tle_pools": nic.tle_pools,
                "le_pools": nic.le_pools,
            }
            for name, nic in self._nics.items()
        }
        self._state.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._state.with_suffix(".tmp")
        temporary.write_text(json.dumps(saved))
        os.replace(temporary, self._state)

    def _nic(self, device: str) -> _Nic:
        try:
            return self._nics[device]
        except KeyError:
            raise CxiError(f"{device}: No such device") from None

    def devices(self) -> list[Device]:
        with self._lock:
            return [
                Device(name, dict(nic.totals), tuple(nic.services[i] for i in sorted(nic.services)))
                for name, nic in self._nics.items()
            ]

    def allocate(self, device: str, request: ServiceRequest) -> int:
        with self._lock:
            nic = self._nic(device)
            limits = dict(request.limits)
            if len(request.vnis) > 4 or any(v == 0 or v > 0xFFFF for v in request.vnis):
                raise CxiError("Failed to create service: Invalid argument")
            for resource, (most, reserved) in limits.items():
                if most < reserved or most > nic.totals.get(resource, 0):
                    raise CxiError("Failed to create service: Invalid argument")
            if limits.get("tles", (0, 0))[1] > 0:
                tles = max(limits["tles"][1], 8)
                limits["tles"] = (tles, tles)
            shared = nic.shared()
            short = {r: shared[r] for r, (_, res) in limits.items() if res > shared.get(r, 0)}
            if short:
                raise CxiNoSpace("Failed to create service: No space left on device", shared)
            takes_tle = limits.get("tles", (0, 0))[1] > 0
            takes_le = limits.get("les", (0, 0))[1] > 0
            if takes_tle and nic.tle_pools == 0:
                raise CxiNoSpace("Failed to create service: No space left on device", shared)
            if takes_le and nic.le_pools == 0:
                raise CxiNoSpace("Failed to create service: No space left on device", shared)
            nic.tle_pools -= takes_tle
            nic.le_pools -= takes_le
            ident = next(i for i in range(1, len(nic.services) + 2) if i not in nic.services)
            nic.services[ident] = Service(
                ident, uids=(request.uid,), vnis=request.vnis, tcs=request.tcs, limits=limits
            )
            nic.busy_until[ident] = 0.0
            if request.uid in self.busy_uids:  # the job starts processes that outlive it
                self._stray(request.uid)
            self._save()
            return ident

    def use(self, device: str, service_id: int) -> None:
        """A job's process used the service: it stays busy ``busy_s`` from now."""
        with self._lock:
            self._nic(device).busy_until[service_id] = self._clock() + self.busy_s

    def release(self, device: str, service_id: int) -> None:
        """The NIC finished with the service: it can be destroyed now."""
        with self._lock:
            self._nic(device).busy_until[service_id] = 0.0

    def destroy(self, device: str, service_id: int) -> None:
        with self._lock:
            nic = self._nic(device)
            if service_id == 1 or service_id not in nic.services:
                raise CxiError(f"Could not delete service {service_id}: Invalid argument")
            uids = nic.services[service_id].uids
            stray = bool(uids) and uids[0] in self.busy_uids and self._has_strays(uids[0])
            if stray or nic.busy_until.get(service_id, 0.0) > self._clock():
                raise CxiBusy(f"Could not delete service {service_id}: Device or resource busy")
            service = nic.services.pop(service_id)
            nic.busy_until.pop(service_id, None)
            nic.tle_pools += service.limits.get("tles", (0, 0))[1] > 0
            nic.le_pools += service.limits.get("les", (0, 0))[1] > 0
            self._save()

    def disable(self, device: str, service_id: int) -> None:
        """Disable a service (as ``cxi_service disable``)."""
        with self._lock:
            nic = self._nic(device)
            nic.services[service_id] = replace(nic.services[service_id], enabled=False)
            self._save()
