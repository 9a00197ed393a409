"""The simulated API server as the simulated system runs it: ``coral2-pipeline sim
kube-api --with-dws`` in a process of its own, with the system's DWS faults and, as a site
runs it, TLS, tokens and our RBAC rules for our account."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from coral2_sim.kube.identities import KubeEndpoint, with_identities
from coral2_sim.redis_server import free_port
from pipeline.errors import ConfigError

if TYPE_CHECKING:
    from coral2_sim.system import SimulatedSystem


def kube_api_argv(system: SimulatedSystem, port: int) -> list[str]:
    """The command line of the system's API server and DWS controller on ``port``."""
    argv = [sys.executable, "-m", "pipeline.cli", "sim", "kube-api", "--with-dws"]
    argv += ["--port", str(port), "--mapping", str(system.workdir / "rabbitmapping.json")]
    argv += ["--latency", str(system.latency_s), "--reconcilers", str(system.reconcilers)]
    argv += ["--mount-timeout", str(system.mount_timeout_s)]
    if system.node_workers:
        argv.append("--no-mount-agent")
    argv += ["--api-fault-rate", str(system.api_fault_rate)]
    argv += ["--fault-seed", str(system.fault_seed)]
    argv += ["--workflow-fault-rate", str(system.workflow_fault_rate)]
    if system.slow_rabbits:
        argv += ["--slow-rabbits", ",".join(system.slow_rabbits)]
    for path in system.failed_copies:
        argv += ["--fail-copies", path]
    if not system.systemstatus:
        argv.append("--no-systemstatus")
    return argv


def start_kube_api(system: SimulatedSystem) -> KubeEndpoint:
    """Start the API server and the DWS controller in their own process; wait until it
    serves, and return where."""
    port = free_port()
    argv = kube_api_argv(system, port)
    kube = KubeEndpoint(f"http://127.0.0.1:{port}")
    if system.rbac:  # as a site runs it: TLS, tokens, and our RBAC rules for our account
        kube = with_identities(port, system.workdir / "kube")
        argv += kube.server_args()
    system.spawn("kube-api", argv)
    log = system.workdir / "kube-api.log"
    deadline = time.monotonic() + 60
    while not log.exists() or kube.url not in log.read_text(errors="replace").splitlines():
        if system.procs.get("kube-api").poll() is not None or time.monotonic() > deadline:
            raise ConfigError(f"the simulated API server did not start; see {log}")
        time.sleep(0.02)
    return kube


__all__ = ["kube_api_argv", "start_kube_api"]
