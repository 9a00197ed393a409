"""flux-python's handle as the bridge's :class:`~pipeline.bridge.delivery.FluxEndpoint`.

The only module that imports ``flux`` (flux-core's Python bindings, the
optional ``flux`` extra). :func:`run_bridge` registers the ``dws`` service
so the unchanged ``dws-jobtap.so`` talks to us, answers each request
through :func:`pipeline.bridge.service.serve`, and delivers the outbox on a
reactor timer.
"""

from __future__ import annotations

import errno
import logging
from typing import Any

from pipeline.bridge.delivery import Deliverer, FluxError, FluxUnreachable
from pipeline.bridge.service import serve
from pipeline.errors import ConfigError, StoreUnavailable
from pipeline.hooks import Hooks
from pipeline.model.jgf import containment_path, default_cluster_name
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.bridge")

MISSING = (
    "needs flux-python, the Python bindings of flux-core, and could not import it "
    "({error}). Run the bridge on a Flux node where "
    "`python3 -c 'import flux'` works (flux-core's python3 bindings, or "
    "`pip install 'coral2-pipeline[flux]'` matching the installed flux-core), "
    "under the instance owner, e.g. from the system instance's rc1."
)
UNREACHABLE = {errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.EHOSTUNREACH, errno.ENODEV}


def import_flux() -> Any:
    """Import ``flux``; raise ConfigError with what to do when it is missing."""
    try:
        import flux
        import flux.constants
        import flux.job
    except ImportError as exc:
        raise ConfigError(MISSING.format(error=exc)) from exc
    return flux


class HandleEndpoint:
    """RPCs and job KVS puts through one flux handle."""

    def __init__(self, handle: Any, flux: Any) -> None:
        self.handle = handle
        self.flux = flux

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        try:
            answer = self.handle.rpc(topic, payload, nodeid=nodeid).get()
        except OSError as exc:
            if exc.errno in UNREACHABLE:
                raise FluxUnreachable(str(exc)) from exc
            raise FluxError(exc.strerror or str(exc)) from exc
        return answer if isinstance(answer, dict) else {}

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        try:
            kvsdir = self.flux.job.job_kvs(self.handle, jobid)
            kvsdir[key] = value
            kvsdir.commit()
        except OSError as exc:
            if exc.errno in UNREACHABLE:
                raise FluxUnreachable(str(exc)) from exc
            raise FluxError(exc.strerror or str(exc)) from exc


def run_bridge(
    hooks: Hooks, store: Store, mapping: RabbitMapping | None, *, poll_s: float = 0.05
) -> None:
    """Serve ``dws.*`` and deliver the outbox until the reactor stops (SIGTERM/SIGINT)."""
    flux = import_flux()
    handle = flux.Flux()
    endpoint = HandleEndpoint(handle, flux)
    cluster = default_cluster_name()

    def path_of(host: str) -> str:
        if mapping is None:
            return f"/{cluster}/{host}"
        return containment_path(mapping, cluster, host)

    deliverer = Deliverer(store.outbox, endpoint, f"flux-bridge-{cluster}", path_of)

    def on_request(h: Any, _type: int, msg: Any, _arg: Any) -> None:
        answer = serve(hooks, store, msg.topic, msg.payload)
        if not answer["success"]:
            log.error("coral2_dws.py: %s", answer["errstr"])
        h.respond(msg, answer)

    def on_timer(*_: Any) -> None:
        try:
            deliverer.run_once()
        except StoreUnavailable as exc:
            log.warning("outbox: %s", exc)

    handle.service_register("dws").get()
    request = flux.constants.FLUX_MSGTYPE_REQUEST
    watchers = [
        handle.msg_watcher_create(on_request, request, f"dws.{name}")
        for name in ("create", "setup", "post_run", "teardown", "abort", "status")
    ]
    watchers.append(handle.timer_watcher_create(poll_s, on_timer, repeat=poll_s))
    for watcher in watchers:
        watcher.start()
    log.info("flux-bridge: serving dws.* and delivering the outbox")
    handle.reactor_run()
