"""What each ``dws.*`` hook does, decided from what its task gathered.

Flux's hooks reach the pipeline as tasks (``pipeline.tasks.dws``); each
task reads what its decision needs — the job record, the Workflow when
one is to be read, the rabbitmapping — and performs what these functions
return. A refusal is flux-coral2's job exception ``DWS workflow
interactions failed: <why>`` of the hook's own type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.errors import InputError
from pipeline.model.breakdown import MGT_LABELS, servers_of
from pipeline.model.directives import (
    PersistentDW,
    parse_directives,
)
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.job import DeadlineKind, Epilog, JobRecord, Teardown
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import ResourceSet
from pipeline.model.workflow import workflow_body, workflow_name
from pipeline.settings import RabbitSettings
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    CreateRecord,
    CreateWorkflow,
    DisarmDeadline,
    FinishJob,
    MarkDone,
    PatchDesiredState,
    PatchServers,
    RemoveFinalizer,
    SendOnce,
    UpdateJob,
    exception,
)
from pipeline.states.create_rules import CreateRules, check_create
from pipeline.states.data_out import move_to_teardown
from pipeline.states.health import disable_rabbits, drain_unmounted
from pipeline.states.persistent import (
    PersistentOwner,
    PersistentPlacement,
    check_persistent_owners,
    persistent_placement,
)
from pipeline.states.snapshot import Snapshot
from pipeline.states.teardown import WORKFLOW_DEADLINES, free_rabbits


def name_of(jobid: int) -> str:
    """The Workflow of ``jobid`` (:func:`pipeline.model.workflow.workflow_name`)."""
    return workflow_name(jobid)


def refused(jobid: int, kind: str, message: str) -> list[Action]:
    """The job exception ``kind`` (severity 0) of a hook that cannot go on."""
    note = f"DWS workflow interactions failed: {message}"
    return [exception(jobid, kind, 0, note, f"exception:{kind}")]


def on_create(
    jobid: int,
    userid: int,
    groupid: int,
    directives: list[str],
    resources: list[dict[str, Any]],
    failure_tolerance: int,
    dws_version: str,
    rules: CreateRules,
    owners: Mapping[str, PersistentOwner] | None = None,
) -> list[Action]:
    """``dws.create``: the record, the Workflow, and the ``rabbit_workflow`` memo — once
    the request is checked again against ``rules`` (else the hook's job exception), and
    against ``owners`` (the persistent storage it names, :func:`check_persistent_owners`)
    before any Workflow exists."""
    try:
        check_create(directives, userid, resources, failure_tolerance, rules)
        check_persistent_owners(directives, userid, owners or {}, name_of(jobid))
    except InputError as exc:
        return refused(jobid, "dws-create", str(exc))
    name = name_of(jobid)
    used = [d.name for d in parse_directives(directives) if isinstance(d, PersistentDW)]
    record = JobRecord(
        jobid=jobid,
        userid=userid,
        workflow=name,
        resources=resources,
        failure_tolerance=failure_tolerance,
        persistent=list(dict.fromkeys(used)),
    )
    body = workflow_body(jobid, userid, groupid, directives, version=dws_version)
    memo = {"id": jobid, "memo": {"rabbit_workflow": name}}
    return [
        CreateRecord(record),
        CreateWorkflow(body, refused_as="dws-create"),
        SendOnce("memo", memo, "memo:rabbit_workflow"),
    ]


def on_setup(
    jobid: int,
    R: dict[str, Any],
    mapping: RabbitMapping,
    storages: list[dict[str, Any]],
    settings: RabbitSettings,
    now: float,
    behind: Mapping[str, str | None] | None = None,
    instances: Mapping[str, PersistentPlacement] | None = None,
    mgts: Mapping[str, str] | None = None,
) -> list[Action]:
    """``dws.setup`` (the job reached RUN): fill Servers from R and the breakdowns' storage,
    tell Flux the rabbits, move to Setup and arm ``setup_timeout``.

    ``mgts``: the rabbits holding another file system's Lustre MGT, for a job that makes
    one (:func:`needs_mgt`): its MGT goes on a rabbit of its own that holds none.

    ``instances``: the rabbit-local persistent instances its persistentdw directives name
    (:func:`persistent_placement`): a job whose computes nnf could not give one is refused
    here, naming the compute and the rabbits, not in PreRun (or never, for a compute that
    would run on a directory nothing is mounted on).

    ``behind``: for storage on the rabbits next to the computes, the rabbit whose Storage
    lists each compute (:func:`needs_topology`). nnf gives each rabbit's allocations to
    the computes its Storage lists, so a compute the rabbitmapping puts behind another
    rabbit would run on a directory nothing is mounted on: the job is refused instead,
    naming the compute and both rabbits.

    A duplicate finds the Workflow moved on and stops there: the deadline is
    armed once.
    """
    name = name_of(jobid)
    try:
        computes, counts = placement(R, mapping)
        servers = [servers_of(storage, counts, len(computes), mgts) for storage in storages]
    except InputError as exc:
        return refused(jobid, "dws-setup", str(exc))
    if behind is not None and (drift := topology_drift(computes, mapping, behind)):
        return refused(jobid, "dws-setup", drift)
    for name_used, instance in sorted((instances or {}).items()):
        if problem := persistent_placement(name_used, instance, computes, mapping):
            return refused(jobid, "dws-setup", problem)
    gone = tuple(refused(jobid, "dws-setup", f"workflow {name} does not exist"))
    actions: list[Action] = [
        CreateRecord(JobRecord(jobid=jobid, workflow=name)),
        UpdateJob({"hosts": computes, "rabbits": list(counts)}),
        *(
            PatchServers(reference["name"], reference.get("namespace"), sets, if_gone=gone)
            for reference, sets in servers  # the same sets again on a duplicate: no change
        ),
        SendOnce(
            "memo",
            {"id": jobid, "memo": {"rabbits": encode_hostlist(list(counts))}},
            "memo:rabbits",
        ),
        PatchDesiredState("Proposal", "Setup", if_moved_on="stop", if_gone=gone),
    ]
    if settings.setup_timeout > 0:
        actions.append(ArmDeadline(DeadlineKind.SETUP, settings.setup_timeout, "setup"))
    return actions


def placement(R: dict[str, Any], mapping: RabbitMapping) -> tuple[list[str], dict[str, int]]:
    """The job's computes (its hosts that are not rabbits) and how many are behind each
    rabbit, by the rabbitmapping. Raises InputError for an R that cannot be read."""
    hosts = ResourceSet.parse(R).unique_hosts()
    computes = [h for h in hosts if not mapping.is_rabbit(h)]
    return computes, mapping.nodes_per_rabbit(computes)


def needs_mgt(storages: list[dict[str, Any]]) -> list[str]:
    """The Servers of the breakdowns' storage that make a Lustre MGT (none: no MGT)."""
    return [
        str((storage.get("reference") or {}).get("name") or "")
        for storage in storages
        if any(a.get("label") in MGT_LABELS for a in storage.get("allocationSets") or [])
    ]


def needs_topology(storages: list[dict[str, Any]]) -> bool:
    """Whether any of the breakdowns' storage is allocated on each compute's own rabbit
    (xfs, gfs2, raw: ``AllocatePerCompute``), which nnf hands out by the PCIe topology."""
    return any(
        aset.get("allocationStrategy") == "AllocatePerCompute"
        for storage in storages
        for aset in storage.get("allocationSets") or []
        if isinstance(aset, Mapping)
    )


def topology_drift(
    computes: list[str], mapping: RabbitMapping, behind: Mapping[str, str | None]
) -> str | None:
    """One line naming the first compute the rabbitmapping puts behind another rabbit than
    its Storage does, or None when they agree."""
    for compute in computes:
        mapped, real = mapping.rabbit_of(compute), behind.get(compute)
        if real == mapped:
            continue
        where = (
            "listed in no rabbit's Storage (status.access.computes)"
            if real is None
            else f"behind {real} by that rabbit's Storage (status.access.computes)"
        )
        return (
            f"compute {compute} is {where} but behind {mapped} by the rabbitmapping, so "
            f"nnf would mount it nothing; rebuild the rabbitmapping "
            f"(coral2-pipeline rabbitmapping --from-storages) and restart the workers"
        )
    return None


def workflow_gone(job: JobRecord) -> list[Action]:
    """The Workflow is gone: release the epilog if Flux waits for it, disarm the deadlines
    on its states (none of them can come now: a Workflow deleted by hand, or whose
    Teardown's record a Redis crash lost), and finish."""
    disarm = [DisarmDeadline(kind) for kind in sorted(WORKFLOW_DEADLINES)]
    if not job.epilog_held:
        return [
            *free_rabbits(job),
            *disarm,
            MarkDone({"teardown": Teardown.DELETED}),
            FinishJob(),
        ]
    return [
        SendOnce("epilog-remove", {"id": job.jobid}, "epilog-remove"),
        *disarm,
        MarkDone({"teardown": Teardown.DELETED, "epilog": Epilog.RELEASED}),
        FinishJob(),
    ]


def on_workflow_gone(job: JobRecord | None, jobid: int, tracked: bool = True) -> list[Action]:
    """``dws.observe`` found the Workflow gone: note it; a job whose Teardown was done (or
    that has no record but is ``tracked``) is finished, one whose Workflow vanished before
    its Teardown was seen is let go as :func:`workflow_gone` says; one that never had a
    Workflow read (created but not observed yet) waits for its own hooks. A job the
    pipeline never tracked (an observe before its ``dws.create`` ran, as a duplicate
    delivery makes) is left alone: finishing it would make its ``dws.create`` do nothing
    and leave it in DEPEND for good."""
    if job is None:
        return [FinishJob()] if tracked else []
    gone: list[Action] = [UpdateJob({"state": "deleted"})]
    if job.teardown == Teardown.DELETED:
        return [*gone, FinishJob()]
    if job.observed_rv:  # it existed, and vanished before its Teardown was seen
        return [*gone, *workflow_gone(job)]
    return gone


def tear_down(
    job: JobRecord, workflow: dict[str, Any] | None, settings: RabbitSettings
) -> list[Action]:
    """flux-coral2's ``check_existence_and_move_to_teardown``: ``workflow`` as just read
    (None: it does not exist)."""
    if workflow is None:
        return workflow_gone(job)
    snapshot = Snapshot(workflow)
    actions = [CreateRecord(job), *move_to_teardown(snapshot, job, settings)]
    if snapshot.deleting:  # deleted by hand: no transition will come; let it go
        actions = [a for a in actions if not isinstance(a, PatchDesiredState)]
        actions.append(RemoveFinalizer())
    return actions


def on_post_run(
    job: JobRecord,
    run_started: bool,
    workflow: dict[str, Any] | None,
    settings: RabbitSettings,
    now: float,
) -> list[Action]:
    """``dws.post_run`` (the job finished, or reached CLEANUP without running): on to
    PostRun, arming ``teardown_after`` and ``postrun_timeout``; straight to Teardown when
    the job never ran. ``workflow`` is read only for that."""
    if job.teardown != Teardown.NOT_ASKED:
        return []
    if not run_started:
        return tear_down(job, workflow, settings)
    actions: list[Action] = [
        PatchDesiredState(
            "PreRun", "PostRun", if_moved_on="stop", if_gone=tuple(workflow_gone(job))
        )
    ]
    if settings.teardown_after > 0:
        actions.append(
            ArmDeadline(DeadlineKind.TEARDOWN_AFTER, settings.teardown_after, "post_run")
        )
    if settings.postrun_timeout > 0:
        actions.append(ArmDeadline(DeadlineKind.POSTRUN, settings.postrun_timeout, "post_run"))
    return actions


def on_epilog_lost(
    job: JobRecord,
    run_started: bool,
    workflow: dict[str, Any] | None,
    settings: RabbitSettings,
    now: float,
) -> list[Action]:
    """dws-jobtap gave the job's DWS epilog up (its ``dws-epilog`` exception: nothing
    served ``dws.post_run`` when the job finished): move the Workflow on as
    ``dws.post_run`` would — its data still moved out, its rabbits freed once Teardown
    completes — and send no ``epilog-remove``, which Flux no longer waits for."""
    if job.epilog in (Epilog.RELEASED, Epilog.EARLY):
        return []  # Flux took our answer before it gave up
    abandoned = job.model_copy(update={"epilog": Epilog.ABANDONED})
    return [
        UpdateJob({"epilog": Epilog.ABANDONED}),
        *on_post_run(abandoned, run_started, workflow, settings, now),
    ]


def on_teardown(
    job: JobRecord, workflow: dict[str, Any] | None, settings: RabbitSettings
) -> list[Action]:
    """``dws.teardown`` (a fatal exception while the DWS epilog runs): tear down unless
    that was asked already."""
    if job.teardown != Teardown.NOT_ASKED:
        return []
    return tear_down(job, workflow, settings)


def on_abort(
    job: JobRecord,
    workflow: dict[str, Any] | None,
    unmounted: list[str],
    rabbits: list[str],
    settings: RabbitSettings,
    now: float,
) -> list[Action]:
    """``dws.abort`` (Flux gave the epilog up on ``dws-epilog-timeout``): send no
    ``epilog-remove``, tear down, drain the computes that did not unmount and disable the
    rabbits still holding an allocation."""
    abandoned = job.model_copy(update={"epilog": Epilog.ABANDONED})
    actions: list[Action] = [
        CreateRecord(JobRecord(jobid=job.jobid)),
        UpdateJob({"epilog": Epilog.ABANDONED}),
    ]
    if job.teardown == Teardown.NOT_ASKED:
        actions += tear_down(abandoned, workflow, settings)
    return [
        *actions,
        *drain_unmounted(unmounted),
        *disable_rabbits(name_of(job.jobid), rabbits, now),
    ]
