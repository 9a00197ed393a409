"""Lifecycle tasks for the ``dws.*`` hooks: create, setup, post_run, teardown, abort.

Each is enqueued by exactly one hook (``pipeline.hooks``) and holds the
job's lock. Each may run twice or after a crash half-way: creates count
409 as done, patches are guarded or idempotent merges, messages to Flux
go through once-only outbox writes.
"""

from __future__ import annotations

import pwd
import time
from functools import cache
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.errors import AlreadyExists, Conflict, Forbidden, InputError, NotFound
from pipeline.model.breakdown import servers_of, storages_of
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.job import JobRecord
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import ResourceSet
from pipeline.model.workflow import workflow_body
from pipeline.settings import RabbitSettings
from pipeline.states import Snapshot
from pipeline.states.actions import Action, SendOnce, exception
from pipeline.states.data_out import move_to_teardown
from pipeline.store import Store
from pipeline.tasks import timeouts
from pipeline.tasks.act import perform
from pipeline.tasks.base import PipelineTask, pipeline_task
from pipeline.tasks.health import disable_rabbits_with_allocations, drain_unmounted


@cache
def mapping_of(path: str) -> RabbitMapping:
    """The rabbitmapping at ``path`` (read once per process)."""
    return RabbitMapping.load(path)


def primary_gid(uid: int) -> int:
    """The primary group of ``uid`` (the uid itself when the user is unknown here)."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid


def rabbit_settings(task: PipelineTask) -> RabbitSettings:
    """The ``[rabbit]`` settings of the task's app."""
    settings: RabbitSettings = task.app.conf.coral2_rabbit
    return settings


def _fail(task: PipelineTask, jobid: int, kind: str, message: str) -> None:
    perform(
        task.store,
        task.dws,
        jobid,
        [
            exception(
                jobid, kind, 0, f"DWS workflow interactions failed: {message}", f"exception:{kind}"
            )
        ],
    )


def teardown_now(task: PipelineTask, jobid: int) -> None:
    """flux-coral2's ``check_existence_and_move_to_teardown``."""
    store: Store = task.store
    record = store.jobs.latest(jobid) or JobRecord(jobid=jobid)
    try:
        workflow = task.dws.get_workflow(f"fluxjob-{jobid}")
    except NotFound:
        actions: list[Action] = []
        if not record.epilog_removed:
            actions.append(SendOnce("epilog-remove", {"id": jobid}, "epilog-remove"))
        perform(store, task.dws, jobid, actions)
        store.jobs.update(
            jobid, lambda r: r.model_copy(update={"deleted": True, "epilog_removed": True})
        )
        store.jobs.finish(jobid, task.app.conf.coral2_retention_s)
        return
    store.jobs.create(record)
    perform(
        store, task.dws, jobid, move_to_teardown(Snapshot(workflow), record, rabbit_settings(task))
    )


@pipeline_task("dws.create", queue="lifecycle", lock_job=True)
def create(
    task: PipelineTask,
    jobid: int,
    userid: int,
    directives: list[str],
    resources: list[dict[str, Any]],
    failure_tolerance: int,
) -> bool:
    """Create ``fluxjob-<jobid>``; enqueued by the ``dws.create`` hook (job in DEPEND)."""
    store = task.store
    store.jobs.create(
        JobRecord(
            jobid=jobid,
            userid=userid,
            workflow=f"fluxjob-{jobid}",
            resources=resources,
            failure_tolerance=failure_tolerance,
        )
    )
    try:
        task.dws.create_workflow(
            workflow_body(jobid, userid, primary_gid(userid), directives, version=task.dws.version)
        )
    except AlreadyExists:
        pass
    except Forbidden as exc:
        _fail(task, jobid, "dws-create", str(exc))
        return False
    perform(
        store,
        task.dws,
        jobid,
        [
            SendOnce(
                "memo",
                {"id": jobid, "memo": {"rabbit_workflow": f"fluxjob-{jobid}"}},
                "memo:rabbit_workflow",
            )
        ],
    )
    return True


@pipeline_task("dws.setup", queue="lifecycle", lock_job=True)
def setup(task: PipelineTask, jobid: int, R: dict[str, Any]) -> bool:
    """Fill Servers from R and move to Setup; enqueued by ``dws.setup`` when the job reaches RUN.

    The DirectiveBreakdowns' storage comes from the job record, where the Proposal
    observe saved it as it read them; the move to Setup is then one guarded patch, and
    only a Workflow found elsewhere (a duplicate ``dws.setup``) is read.
    """
    store, dws, settings = task.store, task.dws, rabbit_settings(task)
    if not settings.mapping:
        _fail(task, jobid, "dws-setup", "rabbit.mapping is not configured")
        return False
    name = f"fluxjob-{jobid}"
    try:
        mapping = mapping_of(settings.mapping)
        hosts = ResourceSet.parse(R).unique_hosts()
        computes = [h for h in hosts if not mapping.is_rabbit(h)]
        counts = mapping.nodes_per_rabbit(computes)
        record = store.jobs.latest(jobid)
        storages = None if record is None else record.storages
        workflow = None
        if storages is None:  # saved by an older release's observe, or not at all: read
            workflow = dws.get_workflow(name)
            if (workflow.get("spec") or {}).get("desiredState") != "Proposal":
                return True  # a duplicate dws.setup: this one already moved the Workflow on
            storages = storages_of(dws.directive_breakdowns(workflow))
        servers = [servers_of(storage, counts, len(computes)) for storage in storages]
    except NotFound:
        _fail(task, jobid, "dws-setup", f"workflow {name} does not exist")
        return False
    except InputError as exc:
        _fail(task, jobid, "dws-setup", str(exc))
        return False
    store.jobs.create(JobRecord(jobid=jobid, workflow=name))
    store.jobs.update(
        jobid, lambda r: r.model_copy(update={"hosts": computes, "rabbits": list(counts)})
    )
    try:
        for reference, sets in servers:  # the same sets again on a duplicate: no change
            dws.patch_servers(reference["name"], sets, namespace=reference.get("namespace"))
    except NotFound:
        if _asked(dws, name) is None:
            _fail(task, jobid, "dws-setup", f"workflow {name} does not exist")
            return False
        raise
    memo = {"id": jobid, "memo": {"rabbits": encode_hostlist(list(counts))}}
    perform(store, dws, jobid, [SendOnce("memo", memo, "memo:rabbits")])
    try:
        dws.patch_desired_state(name, "Setup", expected_state="Proposal", current=workflow)
    except NotFound:
        _fail(task, jobid, "dws-setup", f"workflow {name} does not exist")
        return False
    except Conflict as exc:
        asked = _asked(dws, name)
        if asked not in (None, "Proposal"):
            return True  # a duplicate dws.setup: the Workflow has moved on
        _fail(task, jobid, "dws-setup", str(exc) if asked else f"workflow {name} does not exist")
        return False
    if settings.setup_timeout > 0:
        timeouts.arm(store, jobid, "setup_timeout", time.time() + settings.setup_timeout, "setup")
    return True


def _asked(dws: DwsClient, name: str) -> str | None:
    """The Workflow's ``desiredState`` as read now; None when it does not exist."""
    try:
        return str((dws.get_workflow(name).get("spec") or {}).get("desiredState", ""))
    except NotFound:
        return None


@pipeline_task("dws.post_run", queue="lifecycle", lock_job=True)
def post_run(task: PipelineTask, jobid: int, run_started: bool) -> None:
    """Move to PostRun (Teardown if the job never ran); enqueued by ``dws.post_run``."""
    record = task.store.jobs.latest(jobid)
    if record is not None and record.toredown:
        return
    if not run_started:
        teardown_now(task, jobid)
        return
    settings = rabbit_settings(task)
    try:
        task.dws.patch_desired_state(f"fluxjob-{jobid}", "PostRun", expected_state="PreRun")
    except NotFound:
        teardown_now(task, jobid)
        return
    except Conflict:
        return  # a duplicate dws.post_run: the Workflow is already past PostRun
    now = time.time()
    if settings.teardown_after > 0:
        timeouts.arm(task.store, jobid, "teardown_after", now + settings.teardown_after, "post_run")
    if settings.postrun_timeout > 0:
        timeouts.arm(
            task.store, jobid, "postrun_timeout", now + settings.postrun_timeout, "post_run"
        )


@pipeline_task("dws.teardown", queue="lifecycle", lock_job=True)
def teardown(task: PipelineTask, jobid: int) -> None:
    """Move to Teardown unless already done; enqueued by ``dws.teardown`` (epilog exception)."""
    record = task.store.jobs.latest(jobid)
    if record is None or not record.toredown:
        teardown_now(task, jobid)


@pipeline_task("dws.abort", queue="lifecycle", lock_job=True)
def abort(task: PipelineTask, jobid: int) -> None:
    """Give up the epilog and tear down; enqueued by ``dws.abort`` (``dws-epilog-timeout``)."""
    store = task.store
    store.jobs.create(JobRecord(jobid=jobid))
    record = store.jobs.update(jobid, lambda r: r.model_copy(update={"epilog_removed": True}))
    if record is None:
        return
    if not record.toredown:
        teardown_now(task, jobid)
    perform(store, task.dws, jobid, drain_unmounted(task, record))
    disable_rabbits_with_allocations(task, record)
