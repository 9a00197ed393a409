"""The demo's busy NIC: a node drained for CXI services its job left busy, then swept.

The ``busy NIC`` job leaves processes behind on its node (``BUSY_UID``), which keep its
CXI services busy until someone ends them, so its node epilog cannot destroy them;
housekeeping retries for ``pipeline.cxi_busy_timeout`` and drains the node with a reason
naming the services — however slow the machine, the services are still busy then. The
demo then does what the admin does: ends the processes left on the node (``pkill -u``),
runs ``coral2-pipeline slingshot clean NODE`` and ``flux resource undrain``. The leak
check that follows finds the VNIs released only if the sweep confirmed the node clean to
the quarantine.
"""

from __future__ import annotations

import subprocess
import sys
import time

from coral2_sim.node.cassini import end_stray_processes
from coral2_sim.system import SimulatedSystem

#: The timings the demo runs housekeeping with, so that the drain and sweep take seconds.
BUSY_ENV = {
    "CORAL2_PIPELINE_PIPELINE__CXI_EPILOG_WAIT": "0.2",
    "CORAL2_PIPELINE_PIPELINE__CXI_BUSY_RETRY": "0.3",
    "CORAL2_PIPELINE_PIPELINE__CXI_BUSY_TIMEOUT": "1",
}
DRAIN_REASON = "CXI services of VNIs"


def sweep_busy_nodes(system: SimulatedSystem, timeout_s: float = 300.0) -> tuple[list[str], str]:
    """Wait for the node the busy job drained, sweep it clean and undrain it; return what
    was done, one line per node, or why it could not be (``""`` when all went well)."""
    assert system.flux is not None
    deadline = time.monotonic() + timeout_s
    drained: dict[str, str] = {}
    while not drained and time.monotonic() < deadline:
        with system.flux.lock:
            drained = {
                host: reason
                for host, reason in system.flux.resources.drained.items()
                if reason.startswith(DRAIN_REASON)
            }
        time.sleep(0.05)
    if not drained:
        return [], f"no node was drained for busy CXI services in {timeout_s:g} s: {_why(system)}"
    done: list[str] = []
    for host, reason in sorted(drained.items()):
        end_stray_processes(system.nic_state(host))  # pkill -u on the node
        problem = _clean(system, host, deadline)
        if problem:
            return done, problem
        system.flux.rpc("resource.undrain", {"targets": host})  # flux resource undrain
        done.append(f"{host} drained ({reason}), swept clean, undrained")
    return done, ""


def _why(system: SimulatedSystem) -> str:
    """What the pipeline holds of the busy job's node: its quarantine and drains."""
    assert system.flux is not None and system.store is not None
    with system.flux.lock:
        drains = dict(system.flux.resources.drained)
    quarantine = system.store.vnipool.query()["quarantine"]
    return f"VNIs in quarantine {quarantine or 'none'}, nodes drained {drains or 'none'}"


def _clean(system: SimulatedSystem, host: str, deadline: float) -> str:
    """Run ``coral2-pipeline slingshot clean HOST`` until it succeeds; why not, or ``""``."""
    argv = [sys.executable, "-m", "pipeline.cli", "slingshot", "clean", host, "--timeout", "10"]
    while True:
        run = subprocess.run(argv, env=system.env(), capture_output=True, text=True, check=False)
        if run.returncode == 0:
            return ""
        if time.monotonic() > deadline:
            return f"slingshot clean {host} failed: {run.stderr.strip() or run.stdout.strip()}"
        time.sleep(0.5)
