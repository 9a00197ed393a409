"""``coral2-pipeline demo --flux real``: the demo's batch on a real Flux.

The simulated system starts without its simulated job manager; a real Flux test instance
(the flux-core, Fluxion and flux-coral2 this machine has installed, found by
:func:`~pipeline.clients.flux_site.find_flux`; one broker per compute
of the sample cluster) takes its place, with ``coral2-pipeline flux-bridge`` beside it as
the ``bridge`` Redis user, and :class:`~coral2_sim.flux_mirror.FluxMirror` gives the
demo its view of the jobs. Only Kubernetes/DWS, the NICs and the fabric manager stay
simulated.
"""

from __future__ import annotations

from typing import cast

from rich.console import Console

from coral2_sim.flux.jobmanager import JobManager
from coral2_sim.flux_mirror import FluxMirror
from coral2_sim.flux_real import RealFlux
from coral2_sim.flux_side import CLUSTER
from coral2_sim.system import SimulatedSystem
from pipeline.clients.flux_site import FluxSite
from pipeline.settings import load_settings


def start_real_flux(
    system: SimulatedSystem, site: FluxSite, console: Console
) -> tuple[RealFlux, dict[str, str]]:
    """Start the instance and its bridge in ``system``; put the mirror in ``system.flux``.
    Return the instance (stop it before the system) and the versions it runs."""
    env = {k: v for k, v in system.env().items() if k.startswith("CORAL2_")}
    chunks = load_settings(env=env).pipeline.chunks_per_nnf
    flux = RealFlux(
        site,
        system.workdir,
        system.mapping,
        CLUSTER,
        dict(system.env(), **system.role_env("bridge")),
        chunks_per_nnf=chunks,
    )
    try:
        flux.start()
        flux.start_bridge()
        mirror = FluxMirror(flux, system.mapping, chunks).start()
    except BaseException:
        flux.stop()
        raise
    # the mirror answers what the demo reads of the simulated job manager
    system.flux = cast(JobManager, mirror)
    found = flux.versions()
    console.print(
        f"real Flux: flux-core {found.get('flux-core', '?')}, "
        f"Fluxion {found.get('flux-sched', '?')}, flux-coral2 {found.get('flux-coral2', '?')}"
        f", {len(system.mapping.computes)} brokers "
        f"started in {flux.started_s:.1f} s",
        highlight=False,
    )
    return flux, found
