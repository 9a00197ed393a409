"""The ``cxi_service`` command of libcxi as a NIC backend (:class:`node_worker.cxi.Nic`).

``cxi_service list -v -d cxiN`` is parsed by its ``ID:`` lines, its
``Label : Value`` pairs and its limits table rows ``<NAME> | max | res |
inuse |``; ``create`` is given a YAML descriptor written by hand (libcxi's
parser accepts the repeated ``vni:`` and ``tc:`` keys that a YAML library
would merge); errors (``cxi_service: <message>``, exit 1) become
:class:`~pipeline.errors.CxiBusy` (``Device or resource busy``),
:class:`~pipeline.errors.CxiNoSpace` (``No space left on device``) or
:class:`~pipeline.errors.CxiError`.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence

from node_worker.cxi import Device, Service, ServiceRequest, free_resources
from pipeline.errors import CxiBusy, CxiError, CxiNoSpace
from pipeline.model.numbers import MAX_COUNT, natural_or_none

#: libcxi's resource names ↔ ours.
NAMES = {
    "ACs": "acs",
    "CTs": "cts",
    "EQs": "eqs",
    "LEs": "les",
    "PTEs": "ptes",
    "TGQs": "tgqs",
    "TXQs": "txqs",
    "TLEs": "tles",
}
TCS = {"DEDICATED_ACCESS": 0x1, "LOW_LATENCY": 0x2, "BULK_DATA": 0x4, "BEST_EFFORT": 0x8}
_DEVICE = re.compile(r"^cxi\d+$")
_TOTAL = re.compile(r"^\s*(\w+):\s+(\d+)\s*$")
_ID = re.compile(r"^\s*ID:\s*(\d+)")
_PAIR = re.compile(r"^\s*(?:--->\s*)?([A-Za-z/ ]+?)\s*:\s*(.*?)\s*$")
_ROW = re.compile(r"^\s*(\w+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|?\s*$")
_UID = re.compile(r"uid=(\d+)")

Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CxiError(f"{' '.join(argv)}: {exc}") from exc


def parse_list(device: str, text: str) -> Device:
    """The device block and services of ``cxi_service list -v`` output."""
    totals: dict[str, int] = {}
    services: list[Service] = []
    current: dict[str, str] | None = None
    limits: dict[str, tuple[int, int]] = {}
    in_totals = False
    for line in text.splitlines():
        if "Total Device Resources" in line:
            in_totals = True
            continue
        if match := _ID.match(line):
            in_totals = False
            if current is not None:
                services.append(_service(current, limits))
            current, limits = {"id": match.group(1)}, {}
            continue
        if in_totals and (match := _TOTAL.match(line)) and match.group(1) in NAMES:
            totals[NAMES[match.group(1)]] = int(match.group(2))
            continue
        if current is None:
            continue
        if (row := _ROW.match(line)) and row.group(1) in NAMES:
            limits[NAMES[row.group(1)]] = (int(row.group(2)), int(row.group(3)))
        elif pair := _PAIR.match(line):
            current[pair.group(1).strip()] = pair.group(2)
    if current is not None:
        services.append(_service(current, limits))
    return Device(device, totals, tuple(services))


def _service(fields: dict[str, str], limits: dict[str, tuple[int, int]]) -> Service:
    def yes(label: str) -> bool:
        return fields.get(label, "No").startswith("Yes")

    members = fields.get("Valid Members", "")
    uids = tuple(int(u) for u in _UID.findall(members)) if yes("Restricted Members") else ()
    vnis_text = fields.get("VNIs", "")
    vnis = tuple(
        n for v in vnis_text.split() if (n := natural_or_none(v, most=MAX_COUNT)) is not None
    )
    tcs = 0xF
    if yes("Restricted TCs"):
        tcs = 0
        for name in fields.get("Valid TCs", "").replace("BULK DATA", "BULK_DATA").split():
            tcs |= TCS.get(name, 0)
    return Service(
        id=int(fields["id"]),
        enabled=yes("Enabled"),
        system=yes("System Service"),
        uids=uids,
        vnis=vnis,
        tcs=tcs,
        limits=dict(limits),
    )


def descriptor(request: ServiceRequest) -> str:
    """The YAML ``cxi_service create -y`` reads for ``request``."""
    lines = ["resource_limits: 1", "restricted_members: 1", "restricted_tcs: 1", "limits:"]
    for name, ours in NAMES.items():
        most, reserved = request.limits.get(ours, (0, 0))
        lines += [f"  - name: {name}", f"    max: {most}", f"    res: {reserved}"]
    lines.append("vnis:")
    lines += [f"  vni: {vni}" for vni in request.vnis]
    lines += ["members:", "  - type: uid", f"    id: {request.uid}", "tcs:"]
    lines += [f"  tc: {name}" for name, bit in TCS.items() if request.tcs & bit]
    return "\n".join(lines) + "\n"


class CxiServiceCli:
    """The node's devices through ``cxi_service`` (``devices``: their names)."""

    def __init__(
        self, devices: Sequence[str], *, command: str = "cxi_service", run: Runner = _run
    ) -> None:
        for name in devices:
            if not _DEVICE.match(name):
                raise ValueError(f"invalid CXI device name {name!r}: expected cxi<N>")
        self.names = list(devices)
        self.command = command
        self.run = run

    def _call(self, *args: str) -> str:
        done = self.run([self.command, *args])
        if done.returncode == 0:
            return done.stdout
        message = (done.stderr or done.stdout).strip().removeprefix("cxi_service: ")
        if "Device or resource busy" in message:
            raise CxiBusy(message)
        if "No space left on device" in message:
            raise CxiNoSpace(message)
        raise CxiError(message or f"{self.command} {' '.join(args)} failed ({done.returncode})")

    def devices(self) -> list[Device]:
        return [parse_list(name, self._call("list", "-v", "-d", name)) for name in self.names]

    def allocate(self, device: str, request: ServiceRequest) -> int:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="cxi-svc-") as yaml:
            yaml.write(descriptor(request))
            yaml.flush()
            try:
                out = self._call("create", "-d", device, "-y", yaml.name)
            except CxiNoSpace as exc:  # the CLI does not say what is left: read it
                now = parse_list(device, self._call("list", "-v", "-d", device))
                shared = free_resources(now.totals, now.services)
                raise CxiNoSpace(str(exc), shared) from exc
        match = re.search(r"Successfully created service: (\d+)", out)
        if match is None:
            raise CxiError(f"cxi_service create on {device} printed no service id: {out!r}")
        return int(match.group(1))

    def destroy(self, device: str, service_id: int) -> None:
        self._call("delete", "-d", device, "-s", str(service_id))


__all__ = ["CxiServiceCli", "descriptor", "parse_list"]
