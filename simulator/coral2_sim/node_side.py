"""The compute nodes' side of the simulated system: one simulated node worker serving
every compute beside its clientmount daemon, as on a real node, or light node emulators
(``coral2-pipeline sim node-emulator``) for the fan-out benchmarks."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import ConfigError
from pipeline.model.hostlist import encode_hostlist

if TYPE_CHECKING:
    from coral2_sim.system import SimulatedSystem


def emulator_times(workdir: Path, index: int) -> Path:
    """Where held node emulator ``index`` writes when its steps ended."""
    return workdir / f"emulator-{index}-times.json"


def start_node_side(system: SimulatedSystem) -> None:
    """Start what serves the computes' queues; return once it serves them."""
    computes = list(system.mapping.computes)
    if system.node_emulators:
        _start_node_emulators(system, computes)
        return
    workdir = system.workdir
    argv = [sys.executable, "-m", "pipeline.cli", "node-worker", "--backend", "simulated"]
    argv += ["--hostname", encode_hostlist(computes), "--sim-root", str(workdir / "mnt")]
    argv += ["--nic", "simulated" if system.slingshot else "none"]
    argv += [f"--sim-cxi-busy={uid}" for uid in system.cxi_busy]
    # the clientmount daemon in a process of its own, as nnf-clientmountd runs beside
    # the node worker: a killed node worker leaves the mounts to it
    mountd = [sys.executable, "-m", "pipeline.cli", "sim", "clientmountd"]
    mountd += ["--hostname", encode_hostlist(computes)]
    mountd += ["--sim-root", str(workdir / "mnt")]
    if system.slow_mounts is not None:
        share, seconds = system.slow_mounts
        mountd += [
            f"--sim-slow-mounts={share}={seconds}",
            f"--sim-fault-seed={system.fault_seed}",
        ]
    kube = system.kube
    if kube is not None and kube.dws_kubeconfig is not None:  # DWS's identity
        system.process_env["clientmountd"] = {
            "CORAL2_PIPELINE_PIPELINE__KUBECONFIG": str(kube.dws_kubeconfig)
        }
    system.spawn("clientmountd", mountd)
    system.spawn("node-worker", [*argv, "--sim-clientmountd-apart"])
    system.wait_node_worker()


def _start_node_emulators(system: SimulatedSystem, computes: list[str]) -> None:
    count = system.node_emulators
    share = -(-len(computes) // count)
    for index in range(count):
        hosts = computes[index * share : (index + 1) * share]
        argv = [sys.executable, "-m", "pipeline.cli", "sim", "node-emulator"]
        argv += ["--hostname", encode_hostlist(hosts)]
        argv += ["--state-dir", str(system.workdir / f"emulator-{index}")]
        if system.emulator_hold:
            argv += [f"--hold={system.emulator_hold}"]
            argv += ["--times", str(emulator_times(system.workdir, index))]
        system.spawn(f"node-emulator-{index}", argv)
    deadline = time.monotonic() + 300  # each loads its nodes' keys first
    for index in range(count):
        log = system.workdir / f"node-emulator-{index}.log"
        while "serving" not in log.read_text():
            if system.procs.get(f"node-emulator-{index}").poll() is not None:
                raise ConfigError(f"node emulator {index} died; see {log}")
            if time.monotonic() > deadline:
                raise ConfigError(f"node emulator {index} did not start; see {log}")
            time.sleep(0.05)
