"""Slingshot tasks: the VNI reservation at RUN, CXI services on every node, cleanup.

Enqueued by the job-state hook (``pipeline.services.hooks``) when a job
reaches RUN or CLEANUP, and by the node workers as their CXI prolog and
epilog end. Each holds the job's lock, reads what ``pipeline.states.slingshot``
needs and performs what it decides.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.errors import InputError, VniError
from pipeline.model.job import JobRecord
from pipeline.model.resource_set import ResourceSet
from pipeline.model.slingshot import vni_request
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.states import slingshot
from pipeline.store import Deadline
from pipeline.tasks.dws import act, record_of
from pipeline.tasks.timeouts import handles


@pipeline_task("slingshot.run", queue="lifecycle", lock_job=True)
def run(
    task: PipelineTask, jobid: int, userid: int, R: dict[str, Any], option: Any = None
) -> list[int]:
    """Reserve the job's VNIs and give its nodes their CXI services; enqueued by the
    job-state hook when the job reaches RUN (Flux holds it until the services are up).
    Returns the VNIs."""
    resources = ResourceSet.parse(R)
    cores = {host: len(resources.cores(host)) for host in resources.unique_hosts()}
    record = record_of(task, jobid).model_copy(update={"userid": userid})
    if record.slingshot is not None:  # a duplicate: the reservation stands
        act(task, jobid, slingshot.resume(record, cores))
        return record.slingshot.vnis
    task.store.jobs.create(record)
    settings = task.settings.cray_slingshot
    pool = task.store.vnipool
    pool.configure(settings.vni_pool)
    try:
        request = vni_request(option, settings.vnis_per_job)
    except InputError as exc:
        act(task, jobid, [*slingshot.fail(jobid, str(exc))])
        return []
    vnis: list[int] = []
    reason, fatal = request.reason, False
    if request.count:
        try:
            vnis = pool.reserve(jobid, request.count)
        except VniError as exc:
            reason, fatal = str(exc), settings.vni_reserve_fatal
    actions = slingshot.on_reserved(
        record, vnis, reason, fatal=fatal, cores=cores, cxi_enable=settings.cxi_enable
    )
    act(task, jobid, actions)
    return vnis


@pipeline_task("slingshot.node_ready", queue="lifecycle", lock_job=True)
def node_ready(task: PipelineTask, jobid: int, node: str, task_id: str, error: str = "") -> None:
    """A node's CXI prolog ended (``error``: why it could not); sent by the node worker."""
    record = record_of(task, jobid)
    if error:
        act(task, jobid, slingshot.on_node_failed(record, node, error))
    else:
        act(task, jobid, slingshot.on_node_ready(record, node))
    task.store.ledger.done(task_id)


@pipeline_task("slingshot.cleanup", queue="lifecycle", lock_job=True)
def cleanup(task: PipelineTask, jobid: int) -> None:
    """Release the job's VNIs into quarantine and destroy its CXI services; enqueued by
    the job-state hook when the job reaches CLEANUP (nothing in Flux waits for it)."""
    act(task, jobid, slingshot.on_cleanup(record_of(task, jobid)))


@pipeline_task("slingshot.node_clean", queue="lifecycle", lock_job=True)
def node_clean(
    task: PipelineTask, jobid: int, node: str, task_id: str, busy: list[str] | None = None
) -> None:
    """A node's CXI epilog ended; ``busy``: its services still in use. Sent by the node
    worker."""
    record = record_of(task, jobid)
    act(task, jobid, slingshot.on_node_clean(record, node, list(busy or []), time.time()))
    task.store.ledger.done(task_id)


@handles("cxi_retry")
def cxi_retry(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Housekeeping: send the CXI epilog again to the nodes whose services were busy."""
    act(task, record.jobid, slingshot.on_retry(record))
