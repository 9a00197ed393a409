"""Hardware collectives: reservations at the fabric manager around every eligible job.

* ``job.run`` asks for a reservation (:func:`multicast_ask`) and makes it as one of its
  actions (:func:`reserve_multicast`: look it up, make it on a 404, keep it in the
  job record); ``job.prologs`` then posts the ``hwcoll`` event and the environment,
  before the node prologs go out. A
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

from celery import Celery

from pipeline.errors import ConfigError, FabricManagerError, FabricManagerUnavailable
from pipeline.model.hwcoll import (
    addresses_per_job,
    eligible,
    fm_job_id,
    jobid_of,
)
from pipeline.model.jgf import default_cluster_name
from pipeline.model.job import JobRecord
from pipeline.perform import fabric as perform_fabric
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.settings import Settings
from pipeline.states import hwcoll
from pipeline.states.run import MulticastAsk
from pipeline.store.marks import CLEANUP_FENCE
from pipeline.tasks.dws import act, mapping_of

log = logging.getLogger("coral2_pipeline.hwcoll")


def fabric(task: PipelineTask) -> perform_fabric.Client:
    """The app's client of the fabric manager (:mod:`pipeline.perform.fabric`)."""
    return perform_fabric.client_of(task.app, task.settings.hwcoll)


def close_fabric(app: Celery) -> None:
    """Close ``app``'s client of the fabric manager, if it made one."""
    perform_fabric.close(app)


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


def multicast_ask(
    task: PipelineTask, record: JobRecord, nodes: int, asked: bool
) -> MulticastAsk | None:
    """The multicast reservation ``job.run`` asks for (None: none: no fabric manager, a job
    not eligible, or one that holds its reservation or knows why it has none already)."""
    settings = task.settings
    conf = settings.hwcoll
    if not conf.url or record.hwcoll is not None or record.hwcoll_off:
        return None
    if not eligible(nodes, conf.min_job_nodes, asked):
        return None
    down = task.store.fabric.down()
    if down is not None:
        return MulticastAsk(off=f"the fabric manager is not answering ({down})")
    try:
        limit = mcast_limit(settings)
    except ConfigError as exc:
        log.error("job %s runs without hardware collectives: %s", record.jobid, exc)
        return MulticastAsk(off=str(exc))
    return MulticastAsk(fm_job_id=fm_job_id(cluster(settings), record.jobid), limit=limit)


@pipeline_task("hwcoll.release", queue="housekeeping", lock_job=True, retry_cap_s=60.0)
def release(task: PipelineTask, jobid: int) -> bool:
    """Delete job ``jobid``'s multicast trees, then its reservation; return whether there
    was one. Sent by ``job.cleanup``; retried while the fabric manager is unavailable
    (``hwcoll.reconcile`` is the backstop)."""
    actions = hwcoll.on_release(task.store.jobs.get(jobid))
    try:
        act(task, jobid, actions)
    except FabricManagerUnavailable as exc:
        exc.delay_s = task.settings.hwcoll.release_retry
        raise
    return bool(actions)


@pipeline_task("hwcoll.reconcile", queue="housekeeping", max_attempts=3)
def reconcile(task: PipelineTask) -> dict[str, int]:
    """Release our reservations whose job is INACTIVE or unknown; fail running jobs whose
    reservation vanished. Beat runs it every 30 s; it also tells the pipeline the fabric
    manager answers again. One job's actions failing leaves the others' done."""
    settings = task.settings
    if not settings.hwcoll.url:
        return {}
    # the records first (:func:`pipeline.states.hwcoll.reconcile` says why)
    records = {r.jobid: r for r in task.store.jobs.records()}
    held = perform_fabric.reservations(task.store, fabric(task))
    if held is None:
        return {"unavailable": 1}
    jobs, synced = task.store.flux_jobs.view()
    prefix = cluster(settings)
    cleaning = {
        jobid
        for jobid, record in records.items()
        if record.hwcoll is not None and task.store.marks.fenced(jobid, CLEANUP_FENCE)
    }
    decided = hwcoll.reconcile(
        held, records, jobs, synced is not None, lambda fm_id: jobid_of(prefix, fm_id), cleaning
    )
    for jobid, actions in sorted(decided.actions.items()):
        try:
            act(task, jobid, actions)
        except (FabricManagerUnavailable, FabricManagerError) as exc:
            log.warning("hwcoll.reconcile: job %s: %s", jobid, exc)
    return {"released": decided.released, "vanished": decided.vanished, "kept": decided.kept}
