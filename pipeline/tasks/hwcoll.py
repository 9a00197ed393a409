"""Hardware collectives: reservations at the fabric manager around every eligible job.

* :func:`reserve_at_run` (called by ``job.run``, under the job's lock, before
  the node prologs go out): look the reservation up, make it on a 404, keep
  it in the job record, post the ``hwcoll`` event and the environment. A
  fabric manager that is down, slower than ``hwcoll.request_timeout`` or
  refusing costs the job its hardware collectives, never the job: the event
  says why. After a failure the fabric manager counts as down for a while,
  so the next jobs do not each wait the timeout.
* ``hwcoll.release`` (sent by ``job.cleanup``, before it marks the job finished;
  nothing waits for it): delete
  the job step's multicast trees, then the reservation; retried while the
  fabric manager is unavailable.
* ``hwcoll.reconcile`` (beat, every 30 s): list the reservations, release
  ours whose job is INACTIVE or unknown to Flux, leave other clusters' alone,
  and fail a running job whose reservation vanished.

Task arguments carry job ids only: the session token stays in the job record.
"""

from __future__ import annotations

import logging
import threading
import weakref

from celery import Celery

from pipeline.clients.fabric import FabricManager
from pipeline.errors import ConfigError, FabricManagerError, FabricManagerUnavailable
from pipeline.model.hwcoll import (
    Reservation,
    addresses_per_job,
    eligible,
    environment,
    fm_job_id,
    jobid_of,
)
from pipeline.model.jgf import default_cluster_name
from pipeline.model.job import JobRecord
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.settings import Settings
from pipeline.states import hwcoll
from pipeline.states.actions import Action
from pipeline.store.marks import CLEANUP_FENCE
from pipeline.tasks.dws import act, mapping_of

log = logging.getLogger("coral2_pipeline.hwcoll")

#: How long the fabric manager counts as down after a failed request (s).
DOWN_FOR_S = 2.0

_clients: weakref.WeakKeyDictionary[Celery, FabricManager] = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def fabric(task: PipelineTask) -> FabricManager:
    """The app's client of the fabric manager, one per process (its bearer token is
    cached in it)."""
    with _clients_lock:
        client = _clients.get(task.app)
        if client is None:
            client = _clients[task.app] = FabricManager(task.settings.hwcoll)
        return client


def close_fabric(app: Celery) -> None:
    """Close ``app``'s client of the fabric manager, if it made one."""
    with _clients_lock:
        client = _clients.pop(app, None)
    if client is not None:
        client.close()


def cluster(settings: Settings) -> str:
    """The prefix of our reservations' ids."""
    return settings.hwcoll.cluster or settings.pipeline.cluster_name or default_cluster_name()


def mcast_limit(settings: Settings) -> int:
    """Addresses per job: configured, or HPE's formula."""
    conf = settings.hwcoll
    if conf.addresses_per_job is not None:
        return conf.addresses_per_job
    if conf.min_job_nodes is None:
        raise ConfigError(
            "hwcoll: set addresses_per_job, or min_job_nodes for HPE's formula (M / (S / s)) / j"
        )
    size = conf.system_nodes
    if size is None:
        if not settings.rabbit.mapping:
            raise ConfigError("hwcoll: set system_nodes (or rabbit.mapping to count computes)")
        size = len(mapping_of(settings.rabbit.mapping).computes)
    return max(
        1, addresses_per_job(conf.total_addresses, size, conf.min_job_nodes, conf.jobs_sharing)
    )


def reserve_at_run(task: PipelineTask, record: JobRecord, nodes: int, asked: bool) -> list[Action]:
    """The reservation of a job entering RUN, or why it has none (never fatal)."""
    settings = task.settings
    conf = settings.hwcoll
    jobid = record.jobid
    if not conf.url:
        return []
    if record.hwcoll is not None:  # a copy of job.run: say it again (each mark sends once)
        kept = record.hwcoll
        return hwcoll.on_reserved(jobid, kept, environment(kept, conf.url, conf.min_job_nodes))
    if not eligible(nodes, conf.min_job_nodes, asked):
        return []
    down = task.store.fabric.down()
    if down is not None:
        return hwcoll.on_unavailable(jobid, f"the fabric manager is not answering ({down})")
    fm_id = fm_job_id(cluster(settings), jobid)
    try:
        limit = mcast_limit(settings)
        token = fabric(task).reserve(fm_id, limit)
    except FabricManagerUnavailable as exc:
        task.store.fabric.mark_down(str(exc), DOWN_FOR_S)
        log.warning("job %s runs without hardware collectives: %s", jobid, exc)
        return hwcoll.on_unavailable(jobid, str(exc))
    except (FabricManagerError, ConfigError) as exc:
        log.error("job %s runs without hardware collectives: %s", jobid, exc)
        return hwcoll.on_unavailable(jobid, str(exc))
    reservation = Reservation(fm_job_id=fm_id, mcast_limit=limit, token=token, step=str(jobid))
    env = environment(reservation, conf.url, conf.min_job_nodes)
    return hwcoll.on_reserved(jobid, reservation, env)


@pipeline_task("hwcoll.release", queue="housekeeping", lock_job=True, retry_cap_s=60.0)
def release(task: PipelineTask, jobid: int) -> bool:
    """Delete job ``jobid``'s multicast trees, then its reservation; return whether there
    was one. Sent by ``job.cleanup``; retried while the fabric manager is unavailable
    (``hwcoll.reconcile`` is the backstop)."""
    record = task.store.jobs.get(jobid)
    if record is None or record.hwcoll is None or record.hwcoll.released:
        return False
    reservation = record.hwcoll
    client = fabric(task)
    try:
        client.release_step(reservation.fm_job_id, reservation.step)
        client.release(reservation.fm_job_id)
    except FabricManagerUnavailable as exc:
        task.store.fabric.mark_down(str(exc), DOWN_FOR_S)
        exc.delay_s = task.settings.hwcoll.release_retry
        raise
    act(task, jobid, hwcoll.on_released(reservation))
    return True


@pipeline_task("hwcoll.reconcile", queue="housekeeping", max_attempts=3)
def reconcile(task: PipelineTask) -> dict[str, int]:
    """Release our reservations whose job is INACTIVE or unknown; fail running jobs whose
    reservation vanished. Beat runs it every 30 s; it also tells the pipeline the fabric
    manager answers again."""
    settings = task.settings
    if not settings.hwcoll.url:
        return {}
    # the records first: a reservation a record holds was made at the fabric manager
    # before the record was written, so one missing from the list read after it is gone
    # (read the other way round, a job that reserved in between looked vanished)
    records = {r.jobid: r for r in task.store.jobs.records()}
    try:
        held = set(fabric(task).reservations())
    except FabricManagerUnavailable as exc:
        task.store.fabric.mark_down(str(exc), DOWN_FOR_S)
        log.warning("hwcoll.reconcile: %s; trying again next period", exc)
        return {"unavailable": 1}
    task.store.fabric.up()
    jobs, synced = task.store.flux_jobs.view()
    counts = {"released": 0, "vanished": 0, "kept": 0}
    prefix = cluster(settings)
    for fm_id in sorted(held):
        jobid = jobid_of(prefix, fm_id)
        if jobid is None:
            continue  # another cluster's, or not one of ours
        record = records.get(jobid)
        ended = jobs.get(jobid) is not None if jobid in jobs else None
        unknown = jobid not in jobs and synced is not None and record is None
        if ended or unknown:
            try:
                fabric(task).release(fm_id)
            except (FabricManagerUnavailable, FabricManagerError) as exc:
                log.warning("hwcoll.reconcile: releasing %s: %s", fm_id, exc)
                continue
            log.warning("released reservation %s: its job is not running", fm_id)
            counts["released"] += 1
        else:
            counts["kept"] += 1
    for jobid, record in records.items():
        kept = record.hwcoll
        if kept is None or kept.released or kept.fm_job_id in held:
            continue
        if jobid not in jobs or jobs[jobid] is not None:
            continue  # not running
        if task.store.marks.fenced(jobid, CLEANUP_FENCE):
            continue  # its CLEANUP began: the release may be under way
        act(task, jobid, hwcoll.on_vanished(jobid, kept))  # running, reservation gone
        counts["vanished"] += 1
    return counts
