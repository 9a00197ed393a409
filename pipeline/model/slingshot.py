"""Slingshot arithmetic, pure: the VNI universe, per-job VNI requests, CXI service limits and
the job environment — each exactly as flux-coral2's cray-slingshot plugins compute it.

* :func:`parse_universe`: the ``cray-slingshot.vni-pool`` idset, checked against the
  VNIs a job may hold (:data:`VALID_VNIS_TEXT`: 1 and 10 belong to the default CXI service).
* :func:`vni_request`: how many VNIs a job asks for, from its ``cray-slingshot`` shell
  option and ``vnis-per-job``, as the jobtap plugin reads it at RUN.
* :func:`service_limits`: the resource limits of a job's CXI service on one NIC, scaled by
  the node's cores, as ``flux slingshot prolog`` requests them.
* :func:`job_environment`: ``SLINGSHOT_VNIS``, ``SLINGSHOT_DEVICES``, ``SLINGSHOT_SVC_IDS``
  and ``SLINGSHOT_TCS``, as the cray-slingshot shell plugin sets them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import IdsetError, InputError
from pipeline.model.idset import decode_idset

#: The VNIs a job may be given: 1 and 10 are the default CXI service's.
VALID_VNIS_TEXT = "0,2-9,11-65535"
#: The VNIs of :data:`VALID_VNIS_TEXT` that lie inside 0-65535 and are not a job's.
DEFAULT_SERVICE_VNIS = frozenset({1, 10})
LARGEST_VNI = 65535


def invalid_vnis(ids: Iterable[int]) -> list[int]:
    """Those of ``ids`` a job may not hold (not in :data:`VALID_VNIS_TEXT`), ascending."""
    return sorted(v for v in ids if not 0 <= v <= LARGEST_VNI or v in DEFAULT_SERVICE_VNIS)


#: The most VNIs one job may hold.
MAX_VNIS_PER_JOB = 4

#: Traffic class bits of a CXI service's ``tcs`` mask.
DEDICATED_ACCESS, LOW_LATENCY, BULK_DATA, BEST_EFFORT = 0x1, 0x2, 0x4, 0x8
ALL_TCS = DEDICATED_ACCESS | LOW_LATENCY | BULK_DATA | BEST_EFFORT
#: The traffic classes a job's service allows.
JOB_TCS = BEST_EFFORT | LOW_LATENCY

#: CXI resource → (the most a job's service may use, per-core reservation), as
#: ``flux slingshot prolog`` requests them; ``None`` as the cap: the node's cores.
LIMITS: Mapping[str, tuple[int | None, int]] = {
    "txqs": (2048, 2),
    "tgqs": (1024, 1),
    "eqs": (2047, 2),
    "cts": (2047, 1),
    "tles": (None, 1),
    "ptes": (2048, 6),
    "les": (16384, 16),
    "acs": (1022, 2),
}
RESOURCES = tuple(LIMITS)


def parse_universe(text: str) -> tuple[tuple[int, int], ...]:
    """The ranges of a VNI pool idset; ValueError with flux-coral2's message if ``text`` is
    not an idset, or names a VNI a job may not hold."""
    try:
        ids = decode_idset(text)
    except IdsetError as exc:
        raise InputError(f"decode error: {exc}") from exc
    if invalid_vnis(ids):
        raise InputError(f"{text} contains invalid VNIs, must be a subset of {VALID_VNIS_TEXT}")
    ranges: list[tuple[int, int]] = []
    for vni in ids:
        if ranges and ranges[-1][1] == vni - 1:
            ranges[-1] = (ranges[-1][0], vni)
        else:
            ranges.append((vni, vni))
    return tuple(ranges)


def check_count(count: int) -> None:
    """Raise the pool's error for a VNI count out of range."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_VNIS_PER_JOB:
        raise InputError(f"VNI count must be within 1-{MAX_VNIS_PER_JOB}")


def reserve_failure(count: int, available: int) -> str:
    """The pool's message when ``count`` VNIs cannot be reserved."""
    return f"failed to reserve {count} VNI{'s' if count > 1 else ''} ({available} available)"


@dataclass(frozen=True)
class VniRequest:
    """What a job asks of the VNI pool at RUN: ``count`` VNIs, or none for ``reason``."""

    count: int
    reason: str = ""


def vni_request(option: Any, vnis_per_job: int) -> VniRequest:
    """The job's request from its ``cray-slingshot`` shell option (absent: None), as the
    jobtap plugin reads it: ``"off"``, or an object with an optional integer ``vnicount``
    (other keys ignored); anything else raises InputError with the plugin's text."""
    if option == "off":
        return VniRequest(0, "disabled by user request")
    if option is None:
        count = vnis_per_job
    elif isinstance(option, Mapping):
        value = option.get("vnicount", vnis_per_job)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(
                "error parsing cray-slingshot shell options: "
                f"Expected integer, got {_json_type(value)}"
            )
        count = value
    else:
        raise InputError(
            f"error parsing cray-slingshot shell options: Expected object, got {_json_type(option)}"
        )
    if count == 0:
        return VniRequest(0, "none requested")
    return VniRequest(count)  # out of 1-4: the pool refuses it


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    return "array" if isinstance(value, list) else "object"


def reservation_event(vnis: Sequence[int], reason: str = "") -> dict[str, Any]:
    """The context of the job's ``cray-slingshot`` event."""
    if vnis:
        return {"vnis": list(vnis)}
    return {"vnis": [], "empty-reason": reason}


def service_limits(ncores: int, totals: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """The (max, reserved) of each CXI resource for a job's service on a NIC with
    ``totals``, on a node with ``ncores`` cores (a resource the NIC does not report
    counts as 0)."""
    if ncores < 0:
        raise InputError(f"ncores must be non-negative, got {ncores}")
    limits: dict[str, tuple[int, int]] = {}
    for resource, (cap, per_core) in LIMITS.items():
        device = int(totals.get(resource, 0))
        most = min(ncores if cap is None else cap, device)
        limits[resource] = (most, min(per_core * ncores, most))
    return limits


def job_environment(
    *,
    inherited: Mapping[str, str],
    reservation: dict[str, Any] | None,
    devices: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """The ``SLINGSHOT_*`` variables of a job's environment on one node.

    ``inherited``: the enclosing instance's environment (a sub-instance's job
    inherits its VNIs verbatim); ``reservation``: the ``cray-slingshot`` event's
    context, or None; ``devices``: the node's CXI devices with their services
    (``{"name", "services": [{"id", "enabled", "system", "vnis", "tcs"}]}``).
    """
    names = ("SLINGSHOT_VNIS", "SLINGSHOT_DEVICES", "SLINGSHOT_SVC_IDS", "SLINGSHOT_TCS")
    if "SLINGSHOT_VNIS" in inherited:
        return {name: inherited[name] for name in names if name in inherited}
    if reservation is None:
        return {}
    vnis = [int(v) for v in reservation.get("vnis") or []]
    ids: list[str] = []
    tcs = ALL_TCS
    for device in devices:
        match = next(
            (
                s
                for s in device.get("services") or []
                if s.get("enabled") and not s.get("system") and list(s.get("vnis") or []) == vnis
            ),
            None,
        )
        ids.append(str(match["id"]) if match else "-1")
        tcs &= int(match["tcs"]) if match else ALL_TCS
    env: dict[str, str] = {}
    if vnis:
        env["SLINGSHOT_VNIS"] = ",".join(str(v) for v in vnis)
    device_names = [str(d["name"]) for d in devices]
    if device_names:
        env["SLINGSHOT_DEVICES"] = ",".join(device_names)
    if ids:
        env["SLINGSHOT_SVC_IDS"] = ",".join(ids)
    env["SLINGSHOT_TCS"] = f"0x{tcs:x}"
    return env
