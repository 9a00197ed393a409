"""The demo's rabbit outage: a rabbit goes down and comes back while a job wants it.

The rabbit's Storage goes Offline and one of its computes loses PCIe. The
pipeline's health rules drain that compute (``rabbit lost PCIe connection``)
and take the rabbit's ssd vertices down in Flux, so a ``#DW`` job that can
only run on that rabbit's computes waits in SCHED. The rabbit comes back
Ready; the pipeline brings its ssds up, the job runs, and the operator
undrains the compute (coral2_dws never undrains what it drained).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from coral2_sim.demo.batch import DemoJob
from coral2_sim.dws.fixtures import set_compute_access, set_rabbit_status
from coral2_sim.system import SimulatedSystem
from pipeline.model.hostlist import encode_hostlist
from pipeline.states.rabbits import PCIE_REASON

#: how long the job is shown waiting while its rabbit is down (s)
WAIT_S = 3.0


def _until(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def rabbit_outage(system: SimulatedSystem, timeout_s: float = 60.0) -> tuple[list[str], str]:
    """Take the last rabbit down and back with a job waiting on it; return what happened,
    one line per step, and what went wrong (``""`` when all went well)."""
    assert system.flux is not None and system.dws is not None
    flux, dws, mapping = system.flux, system.dws, system.mapping
    rabbit = list(mapping.rabbits)[-1]
    lost, *others = mapping.computes_of(rabbit)
    lines: list[str] = []
    set_compute_access(dws, rabbit, lost, "Offline")
    set_rabbit_status(dws, rabbit, "Offline")

    def down() -> bool:
        with flux.lock:
            ssds = flux.resources.ssd_up.get(rabbit)
            return flux.resources.drained.get(lost) == PCIE_REASON and ssds == set()

    if not _until(down, timeout_s):
        return lines, f"{rabbit} went Offline but Flux did not drain {lost} and take its ssds down"
    lines.append(f"{rabbit} Offline: {lost} drained ({PCIE_REASON}), its ssds down in Flux")
    system_attrs = {
        "dw": "#DW jobdw type=xfs capacity=64GiB name=outage",
        "constraints": {"hostlist": [encode_hostlist(others)]},
    }
    resources = DemoJob("outage", 1).resources()  # a node with a task slot, as every job
    jobid = flux.submit(resources, system=system_attrs, runtime_s=0.3)
    time.sleep(WAIT_S)
    job = flux.job(jobid)
    if job.state != "SCHED":
        why = "; ".join(str(e.get("note")) for e in job.exceptions)
        return lines, (
            f"a job for {rabbit}'s computes was {job.state} while {rabbit} was down"
            + (f" ({why})" if why else "")
        )
    lines.append(f"a job for {rabbit}'s computes waited {WAIT_S:g} s in SCHED")
    set_rabbit_status(dws, rabbit, "Ready")
    set_compute_access(dws, rabbit, lost, "Ready")
    if not flux.wait_inactive([jobid], timeout_s):
        return lines, f"the job waiting on {rabbit} did not run after {rabbit} came back"
    result = flux.job(jobid).result
    if result != "COMPLETED":
        return lines, f"the job waiting on {rabbit} ended {result}"
    lines.append(f"{rabbit} Ready: its ssds up, the job ran ({result})")
    flux.rpc("resource.undrain", {"targets": lost})  # flux resource undrain, by the operator
    lines.append(f"{lost} undrained by the operator")
    return lines, ""
