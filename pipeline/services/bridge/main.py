"""The bridge's main loop inside the Flux instance: the ``dws`` service, the events journal
and outbox delivery.

:func:`run_bridge` registers the ``dws`` service so the unchanged
``dws-jobtap.so`` talks to us, answers each request through
:func:`pipeline.services.bridge.service.serve`, reports every job's RUN and
CLEANUP from the events journal (:mod:`pipeline.services.bridge.journal`),
and delivers the outbox on a reactor timer, all through one
:class:`~pipeline.clients.flux.FluxHandle`.
"""

from __future__ import annotations

import logging

from pipeline.clients.flux import FluxHandle
from pipeline.errors import StoreUnavailable
from pipeline.model.jgf import containment_path, default_cluster_name
from pipeline.model.job import Teardown
from pipeline.model.jobid import decode_jobid
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform import heap
from pipeline.platform.systemd import notify, watchdog_interval
from pipeline.services.bridge.delivery import Deliverer
from pipeline.services.bridge.journal import JobStates
from pipeline.services.bridge.requests import Requests
from pipeline.services.bridge.resources import ResourceMirror
from pipeline.services.hooks import Hooks
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.bridge")

METHODS = ["create", "setup", "post_run", "teardown", "abort", "status"]


#: How often the bridge logs that it is alive (s), as coral2_dws's heartbeat does.
HEARTBEAT_S = 3600.0


def ping_watchdog() -> None:
    """Tell systemd the reactor turns."""
    notify("WATCHDOG=1")


def run_bridge(
    hooks: Hooks, store: Store, mapping: RabbitMapping | None, *, poll_s: float = 0.05
) -> None:
    """Serve ``dws.*`` and deliver the outbox until the reactor stops (SIGTERM/SIGINT)."""
    handle = FluxHandle()
    cluster = hooks.settings.pipeline.cluster_name or default_cluster_name()

    def path_of(host: str) -> str:
        if mapping is None:
            return f"/{cluster}/{host}"
        return containment_path(mapping, cluster, host)

    deliverer = Deliverer(store.outbox, handle, f"flux-bridge-{cluster}", path_of)

    def reserved() -> list[int]:
        return [decode_jobid(f58) for f58 in store.vnipool.query()["jobs"]]

    def held() -> list[int]:
        return [
            r.jobid
            for r in store.jobs.records()
            if r.workflow and r.epilog_held and r.teardown == Teardown.NOT_ASKED
        ]

    states = JobStates(
        hooks,
        reserved,
        view=store.flux_jobs,
        held=held,
        eventlog=handle.eventlog,
        generation=store.generation,
    )
    resources = ResourceMirror(store.resource_log, hostlist=handle.attr("hostlist"))

    def deliver() -> None:
        states.flush()
        resources.flush()
        try:
            deliverer.run_once()
        except StoreUnavailable as exc:
            log.warning("outbox: %s", exc)

    # a request Redis cannot take yet is tried again on the reactor's timers, never
    # slept on in its handler (:mod:`pipeline.services.bridge.requests`)
    handle.serve("dws", METHODS, Requests(hooks, store, handle.after))
    handle.journal(states.feed)
    handle.resource_journal(resources.feed)
    handle.every(poll_s, deliver)
    # supervised as coral2_dws is: the watchdog pinged from the reactor itself (a reactor
    # that no longer turns stops the pings), and a line an hour that says it is alive
    interval = watchdog_interval()
    if interval is not None:
        handle.every(interval, ping_watchdog)
    handle.every(HEARTBEAT_S, lambda: log.info("Service is still alive"))
    log.info("flux-bridge: serving dws.*, reading the events journal, delivering the outbox")
    heap.settle()
    notify("READY=1", "STATUS=serving dws.*, delivering the outbox")
    handle.run()
    notify("STOPPING=1")
