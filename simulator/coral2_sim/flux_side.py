"""The simulated Flux side of the simulated system, in the caller's process: the job
manager with dws-jobtap's behaviour, served by the pipeline's hooks as the bridge serves
them, and the outbox delivered to it."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from celery import Celery

from coral2_sim.flux import libfabric
from coral2_sim.flux.delivery import DeliveryThread
from coral2_sim.flux.hold import StoreHold
from coral2_sim.flux.jobmanager import JobManager
from pipeline.model.jgf import containment_path
from pipeline.platform.sealing import seal_of
from pipeline.services.bridge import service as bridge_service
from pipeline.services.bridge.journal import JobStates
from pipeline.services.hooks import Hooks
from pipeline.settings import Settings, load_settings
from pipeline.store import Store

if TYPE_CHECKING:
    from coral2_sim.system import SimulatedSystem

#: The cluster name of the simulated resource graph (dws2jgf --cluster-name).
CLUSTER = "demo"


def start_flux(system: SimulatedSystem, settings: Settings) -> None:
    """Start the simulated job manager with dws-jobtap, served by our hooks, fed by the
    outbox; set the system's ``hooks``, ``flux`` and ``delivery``."""
    assert system.app is not None and system.store is not None
    from pipeline.platform.app import sender

    store, app = system.store, system.app
    if system.users is not None:  # the bridge's own Redis user, as flux-bridge logs in
        settings, store, app = _as_bridge(system)
    system.hooks = hooks = Hooks(settings, sender(app), owner_uid=os.getuid())
    # the bridge's view of every job (the events journal) and the job-manager prolog
    # (coral2-pipeline flux-prolog) when the pipeline does node work
    node_work = system.node_workers or system.slingshot
    states = (
        JobStates(hooks, view=store.flux_jobs, generation=store.generation) if node_work else None
    )
    system.flux = flux = JobManager(
        system.mapping,
        # the dws service as the bridge serves it: an outage is an error answer
        service=functools.partial(bridge_service.serve, hooks, store),
        journal=states.feed if states is not None else None,
        hold=StoreHold(system.store) if node_work else None,  # flux-prolog: management
        epilog_timeout_s=system.epilog_timeout_s,
        eventlog=store.resource_log,
        # the pipeline's rabbit health brings the ssds up; a shadow run leaves them be
        ssd_chunks=None if system.observe_only else settings.pipeline.chunks_per_nnf,
        on_start=libfabric.on_start if system.fabric is not None else None,
    ).start()
    path_of = functools.partial(containment_path, system.mapping, CLUSTER)

    def flush() -> None:  # every round: it also looks whether Redis restarted
        if states is not None:
            with flux.lock:  # the journal feeds it under the lock
                states.flush()

    system.delivery = DeliveryThread(
        store.outbox, flux, "sim-flux", path_of, system._stopping, flush
    ).start()


def _as_bridge(system: SimulatedSystem) -> tuple[Settings, Store, Celery]:
    """The settings, store and sender app of the ``bridge`` Redis user: what the Flux
    side does in Redis is done with that user's grants alone, as flux-bridge's is."""
    from pipeline.platform.app import create_app

    env = {k: v for k, v in system.env().items() if k.startswith("CORAL2_")}
    assert system.users is not None
    settings = load_settings(env={**env, **system.users.role_env("bridge")})
    store = Store.from_url(settings.store_url, system.prefix, seal_of(settings.pipeline))
    return settings, store, create_app(settings, set_current=False)


__all__ = ["CLUSTER", "start_flux"]
