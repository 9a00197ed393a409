"""Lifecycle tasks for the ``dws.*`` hooks: create, setup, post_run, teardown, abort.

Each is enqueued by exactly one hook (``pipeline.services.hooks``), holds
the job's lock, reads what its decision in ``pipeline.states.hooks`` needs,
and performs the actions it returns. Each may run twice or after a crash
half-way: creates count 409 as done, patches are guarded or idempotent
merges, messages to Flux go through once-only outbox writes.
"""

from __future__ import annotations

import logging
import os
import pwd
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

from pipeline.errors import InputError, NotFound
from pipeline.model.breakdown import storages_of
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.job import JobRecord
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.perform import fabric as perform_fabric
from pipeline.perform.performer import perform
from pipeline.perform.reads import (
    clientmounts_not_in_state,
    persistent_owners,
    persistent_placements,
    rabbits_listing,
    rabbits_serving_mgts,
    rabbits_with_allocations,
)
from pipeline.platform import fanout
from pipeline.platform.sending import dispatch, dispatch_nodes
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.states import hooks
from pipeline.states.actions import Action
from pipeline.states.create_rules import CreateRules
from pipeline.states.persistent import persistent_names
from pipeline.store.jobs import ENDED
from pipeline.store.marks import CLEANUP_FENCE, TEARDOWN_FENCE

log = logging.getLogger("coral2_pipeline.tasks")


@cache
def mapping_of(path: str) -> RabbitMapping:
    """The rabbitmapping at ``path`` (read once per process)."""
    return RabbitMapping.load(path)


def primary_gid(uid: int) -> int:
    """The primary group of ``uid`` (the uid itself when the user is unknown here)."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except (KeyError, OverflowError):
        return uid


#: The task that sends a part of a job's node messages (``pipeline.tasks.nodes``).
SEND_NODES = "job.send_nodes"


def spread(
    task: PipelineTask, jobid: int, sends: Sequence[tuple[str, str, dict[str, Any]]]
) -> list[str]:
    """Send a job's node messages: ``pipeline.send_chunk`` of them from here, and each
    further chunk as a ``job.send_nodes`` task (noted in the ledger like every message),
    which any lifecycle worker process takes, so that a whole machine's messages are
    signed and sent on as many cores as there are worker processes. A chunk names its
    sends as the manifests they make: ``[task name, kwargs, hostlist]`` for each task and
    arguments, never a node's arguments each. Those tasks go out first, then this chunk.
    Returns the ids of the node messages sent from here."""
    chunk = task.settings.pipeline.send_chunk
    first, rest = list(sends[:chunk]), sends[chunk:]
    for start in range(0, len(rest), chunk):
        groups = fanout.grouped(rest[start : start + chunk])
        part = [[g.name, g.kwargs, encode_hostlist(g.hosts)] for g in groups]
        dispatch(task.app, task.store, SEND_NODES, {"jobid": jobid, "groups": part})
    return dispatch_nodes(task.app, task.store, first)


#: The job id of actions no job owns (a rabbit's health): Flux's job ids start at 1.
NO_JOB = 0


def act(
    task: PipelineTask, jobid: int, actions: list[Action], workflow: dict[str, Any] | None = None
) -> bool:
    """Perform ``actions`` for ``jobid`` with the task's store, DWS client and app."""

    def send_node(sends: Sequence[tuple[str, str, dict[str, Any]]]) -> list[str]:
        return spread(task, jobid, sends)

    def send_task(name: str, kwargs: dict[str, Any]) -> str:
        return dispatch(task.app, task.store, name, kwargs)

    def fabric() -> perform_fabric.Client:
        return perform_fabric.client_of(task.app, task.settings.hwcoll)

    retention = task.settings.pipeline.retention
    return perform(
        task.store,
        task.dws,
        jobid,
        actions,
        workflow=workflow,
        retention_s=retention,
        send_node=send_node,
        node_prologs=task.settings.pipeline.node_prologs,
        send_task=send_task,
        fabric=fabric,
    )


def record_of(task: PipelineTask, jobid: int) -> JobRecord:
    """The job's record as it stands (a blank one when there is none)."""
    return task.store.jobs.latest(jobid) or JobRecord(jobid=jobid)


def ended(task: PipelineTask, jobid: int) -> bool:
    """Whether the pipeline is done with ``jobid``: a late or duplicate copy of a task that
    would start its work again then changes nothing (and says so in the log)."""
    if not task.store.marks.is_set(jobid, ENDED):
        return False
    log.info("%s for job %s: the job has ended; nothing to do", task.name, jobid)
    return True


def fence_create(task: PipelineTask, jobid: int) -> None:
    """Put up the job's :data:`TEARDOWN_FENCE` (not a mark of work done but a fence, so
    first), as long as a finished job's record is kept."""
    task.store.marks.fence(jobid, TEARDOWN_FENCE, max(task.settings.pipeline.retention, 3600.0))


def read_workflow(task: PipelineTask, jobid: int) -> dict[str, Any] | None:
    """The job's Workflow as it is now (None: it does not exist)."""
    try:
        return task.dws.get_workflow(hooks.name_of(jobid))
    except NotFound:
        return None


@pipeline_task("dws.create", queue="lifecycle", lock_job=True)
def create(
    task: PipelineTask,
    jobid: int,
    userid: int,
    directives: list[str],
    resources: list[dict[str, Any]],
    failure_tolerance: int,
) -> bool:
    """Create ``fluxjob-<jobid>``; enqueued by the ``dws.create`` hook (job in DEPEND).
    A copy that runs after the job's way out began (:data:`TEARDOWN_FENCE`), or after
    it ended, creates nothing. The hook's checks are made again: a request that breaks
    one gets the hook's job exception, and no Workflow."""
    if ended(task, jobid):
        return False
    if task.store.marks.fenced(jobid, TEARDOWN_FENCE):
        log.info("dws.create for job %s after its teardown began: nothing to do", jobid)
        return False
    owner = task.settings.pipeline.owner_uid
    rules = CreateRules.of(task.settings, os.getuid() if owner is None else owner)
    actions = hooks.on_create(
        jobid,
        userid,
        primary_gid(userid),
        directives,
        resources,
        failure_tolerance,
        task.dws.version,
        rules,
        persistent_owners(task.dws, persistent_names(directives)),
    )
    return act(task, jobid, actions)


@pipeline_task("dws.setup", queue="lifecycle", lock_job=True)
def setup(task: PipelineTask, jobid: int, R: dict[str, Any]) -> bool:
    """Fill Servers from R and move to Setup; enqueued by ``dws.setup`` when the job reaches RUN.

    The DirectiveBreakdowns' storage comes from the job record, where the Proposal
    observe saved it as it read them; the move to Setup is then one guarded patch, and
    only a Workflow found elsewhere (a duplicate ``dws.setup``) is read. For storage on
    the computes' own rabbits, the Storages of the job's rabbits are read too: the
    topology nnf will hand the allocations out by. A copy that runs after the job ended
    does nothing; so does one that runs after the job's CLEANUP began (``job.cleanup``
    ran first, knowing no compute of the job's): its Teardown is coming, and a Setup now
    would let its PreRun make ClientMounts that no epilog unmounts.
    """
    if ended(task, jobid):
        return False
    if task.store.marks.fenced(jobid, CLEANUP_FENCE):
        log.info("dws.setup for job %s after its CLEANUP: nothing to do", jobid)
        return False
    settings = task.settings.rabbit
    if not settings.mapping:
        return act(
            task, jobid, hooks.refused(jobid, "dws-setup", "rabbit.mapping is not configured")
        )
    name = hooks.name_of(jobid)
    workflow = None
    behind: dict[str, str | None] | None = None
    instances = None
    mgts = None
    try:
        mapping = mapping_of(settings.mapping)
        record = task.store.jobs.latest(jobid)
        storages = None if record is None else record.storages
        if storages is None:  # saved by an older release's observe, or not at all: read
            workflow = task.dws.get_workflow(name)
            if (workflow.get("spec") or {}).get("desiredState") != "Proposal":
                return True  # a duplicate dws.setup: this one already moved the Workflow on
            storages = storages_of(task.dws.directive_breakdowns(workflow))
        if hooks.needs_topology(storages):
            computes, counts = hooks.placement(R, mapping)
            behind = rabbits_listing(task.dws, counts, computes)
        used = [] if record is None else record.persistent
        instances = persistent_placements(task.dws, used) if used else None
        if own := hooks.needs_mgt(storages):
            mgts = rabbits_serving_mgts(task.dws, own)
    except NotFound:
        return act(
            task, jobid, hooks.refused(jobid, "dws-setup", f"workflow {name} does not exist")
        )
    except InputError as exc:
        return act(task, jobid, hooks.refused(jobid, "dws-setup", str(exc)))
    actions = hooks.on_setup(
        jobid, R, mapping, storages, settings, time.time(), behind, instances, mgts
    )
    return act(task, jobid, actions, workflow)


@pipeline_task("dws.post_run", queue="lifecycle", lock_job=True)
def post_run(task: PipelineTask, jobid: int, run_started: bool) -> None:
    """Move to PostRun (Teardown if the job never ran); enqueued by ``dws.post_run``."""
    fence_create(task, jobid)
    record = record_of(task, jobid)
    workflow = None if run_started else read_workflow(task, jobid)
    act(
        task,
        jobid,
        hooks.on_post_run(record, run_started, workflow, task.settings.rabbit, time.time()),
    )


@pipeline_task("dws.epilog_lost", queue="lifecycle", lock_job=True)
def epilog_lost(task: PipelineTask, jobid: int, run_started: bool) -> None:
    """Move on as ``dws.post_run`` would, sending no ``epilog-remove``; enqueued when
    the events journal shows dws-jobtap gave the job's DWS epilog up."""
    fence_create(task, jobid)
    record = record_of(task, jobid)
    workflow = None if run_started else read_workflow(task, jobid)
    actions = hooks.on_epilog_lost(record, run_started, workflow, task.settings.rabbit, time.time())
    act(task, jobid, actions)


@pipeline_task("dws.teardown", queue="lifecycle", lock_job=True)
def teardown(task: PipelineTask, jobid: int) -> None:
    """Move to Teardown unless already done; enqueued by ``dws.teardown`` (epilog exception)."""
    fence_create(task, jobid)
    record = record_of(task, jobid)
    workflow = read_workflow(task, jobid)
    act(task, jobid, hooks.on_teardown(record, workflow, task.settings.rabbit))


@pipeline_task("dws.abort", queue="lifecycle", lock_job=True)
def abort(task: PipelineTask, jobid: int) -> None:
    """Give up the epilog and tear down; enqueued by ``dws.abort`` (``dws-epilog-timeout``)."""
    fence_create(task, jobid)
    record = record_of(task, jobid)
    name = hooks.name_of(jobid)
    workflow = read_workflow(task, jobid)
    unmounted = clientmounts_not_in_state(task.dws, name, "unmounted")
    rabbits = rabbits_with_allocations(task.dws, name)
    actions = hooks.on_abort(
        record, workflow, unmounted, rabbits, task.settings.rabbit, time.time()
    )
    act(task, jobid, actions)
