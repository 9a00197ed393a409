"""The fabric manager, as the performer and the gathers reach it: one client per app (its
bearer token cached in it), and the reservation's make and release, each writing what
the pipeline must remember (the reservation, why there is none, the fabric manager
counted down for a while after it failed to answer)."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from pipeline.clients.fabric import FabricManager
from pipeline.errors import FabricManagerError, FabricManagerUnavailable
from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobChanges, JobRecord
from pipeline.settings import HwcollSettings
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.hwcoll")

#: The fabric manager's client, as the tasks name it (they import no client).
Client = FabricManager

#: How long the fabric manager counts as down after a failed request (s).
DOWN_FOR_S = 2.0

_clients: weakref.WeakKeyDictionary[Any, FabricManager] = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def client_of(app: Any, settings: HwcollSettings) -> FabricManager:
    """``app``'s client of the fabric manager, one per process."""
    with _clients_lock:
        client = _clients.get(app)
        if client is None:
            client = _clients[app] = FabricManager(settings)
        return client


def close(app: Any) -> None:
    """Close ``app``'s client of the fabric manager, if it made one."""
    with _clients_lock:
        client = _clients.pop(app, None)
    if client is not None:
        client.close()


def reservations(store: Store, client: FabricManager) -> list[str] | None:
    """The fabric manager's reservations (None: it does not answer; it counts as down)."""
    try:
        held = list(client.reservations())
    except FabricManagerUnavailable as exc:
        store.fabric.mark_down(str(exc), DOWN_FOR_S)
        log.warning("hwcoll.reconcile: %s; trying again next period", exc)
        return None
    store.fabric.up()
    return held


def reserve(
    store: Store, client: FabricManager, jobid: int, fm_id: str, limit: int, step: str
) -> None:
    """Reserve ``limit`` addresses as ``fm_id``, then write the reservation (or why the job
    runs without hardware collectives) into the job's record; a record that holds
    either already is a re-run's, left as it is."""
    record = store.jobs.get(jobid)
    if record is not None and (record.hwcoll is not None or record.hwcoll_off):
        return
    try:
        token = client.reserve(fm_id, limit)
    except FabricManagerUnavailable as exc:
        store.fabric.mark_down(str(exc), DOWN_FOR_S)
        log.warning("job %s runs without hardware collectives: %s", jobid, exc)
        changes: JobChanges = {"hwcoll_off": str(exc)}
    except FabricManagerError as exc:
        log.error("job %s runs without hardware collectives: %s", jobid, exc)
        changes = {"hwcoll_off": str(exc)}
    else:
        reservation = Reservation(fm_job_id=fm_id, mcast_limit=limit, token=token, step=step)
        changes = {"hwcoll": reservation}

    def change(current: JobRecord) -> JobRecord:
        return current.model_copy(update=dict(changes))

    store.jobs.update(jobid, change)


def release(store: Store, client: FabricManager, fm_id: str, step: str | None) -> None:
    """Delete ``fm_id``'s multicast trees of ``step`` (None: none to delete), then the
    reservation (a 404 is done); a fabric manager that does not answer counts as down and
    its :class:`~pipeline.errors.FabricManagerUnavailable` is raised (the task retries)."""
    try:
        if step is not None:
            client.release_step(fm_id, step)
        client.release(fm_id)
    except FabricManagerUnavailable as exc:
        store.fabric.mark_down(str(exc), DOWN_FOR_S)
        raise
