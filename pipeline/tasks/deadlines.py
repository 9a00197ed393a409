"""The lifecycle deadlines' handlers: read what ``pipeline.states.deadlines`` needs, act.

Fired by ``timeouts.fire`` under the job's lock, only while the deadline's
token is still in the job record.

A deadline that guards a Workflow state acts on the Workflow as it is, not as last
observed: coral2_dws stops its timers as each Workflow event arrives, but here an
observe can lag (a worker killed with it, the ledger's resend still to come). So the
handler first observes a Workflow that moved on since the record's last observe, and
fires only if the deadline is still armed after that.
"""

from __future__ import annotations

import logging
from typing import Any

from pipeline.model.breakdown import check_is_lustre
from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.perform.reads import (
    clientmounts_not_in_state,
    rabbits_not_in_state,
    rabbits_not_ready,
)
from pipeline.platform.task import PipelineTask
from pipeline.states import deadlines
from pipeline.states.hooks import name_of
from pipeline.store import Deadline
from pipeline.tasks.dws import act, mapping_of, read_workflow
from pipeline.tasks.observe import record_observation
from pipeline.tasks.timeouts import handles

log = logging.getLogger("coral2_pipeline.timeouts")


Caught = tuple[JobRecord, dict[str, Any] | None]


def caught_up(task: PipelineTask, record: JobRecord, deadline: Deadline) -> Caught | None:
    """The job's record once it holds its Workflow as it is now, and that Workflow (None:
    gone); None when observing it disarmed (or re-armed) ``deadline``: the state it
    guarded is over."""
    workflow = read_workflow(task, record.jobid)
    rv = None if workflow is None else workflow["metadata"].get("resourceVersion")
    if workflow is None or not record.observed_rv or rv == record.observed_rv:
        return record, workflow
    if task.settings.pipeline.observe_only:
        return record, workflow
    log.info(
        "deadline %s of job %s fell due with its Workflow changed since it was last "
        "observed (resourceVersion %s, observed %s): observing it first",
        deadline.kind,
        record.jobid,
        rv,
        record.observed_rv,
        extra={"jobid": record.jobid},
    )
    record_observation(task, record.jobid, workflow)
    now = task.store.jobs.latest(record.jobid)
    if now is None or now.deadlines.get(deadline.kind) != deadline.token:
        log.info("deadline %s of job %s is over once observed", deadline.kind, record.jobid)
        return None
    return now, workflow


def rabbits_of(task: PipelineTask, computes: list[str]) -> dict[str, str]:
    """The rabbit of each of ``computes`` the mapping knows (none without a mapping)."""
    if not computes or not task.settings.rabbit.mapping:
        return {}
    mapped = mapping_of(task.settings.rabbit.mapping).computes
    return {h: mapped[h] for h in computes if h in mapped}


def not_mounted(task: PipelineTask, record: JobRecord) -> list[str]:
    """The job's computes that did not mount: those whose own ClientMounts did not, and
    those behind a rabbit whose ClientMounts did not (its node manager down: what it
    serves the job is not there), by the mapping — never the rabbit itself."""
    name = name_of(record.jobid)
    computes = clientmounts_not_in_state(task.dws, name, "mounted")
    rabbits = set(rabbits_not_in_state(task.dws, name, "mounted"))
    if rabbits and task.settings.rabbit.mapping:
        mapped = mapping_of(task.settings.rabbit.mapping).computes
        computes += [h for h in record.hosts if mapped.get(h) in rabbits]
    return list(dict.fromkeys(computes))


@handles(DeadlineKind.SETUP)
def setup_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Setup took longer than ``rabbit.setup_timeout``."""
    if (caught := caught_up(task, record, deadline)) is None:
        return
    record, workflow = caught
    if workflow is None:
        return
    lustre = any(
        check_is_lustre(((b.get("status") or {}).get("storage") or {}).get("allocationSets") or [])
        for b in task.dws.directive_breakdowns(workflow)
    )
    behind: list[str] = []
    mapping_path = task.settings.rabbit.mapping
    if record.failure_tolerance > 0 and not lustre and mapping_path:
        slow = rabbits_not_ready(task.dws, name_of(record.jobid))
        computes = mapping_of(mapping_path).computes
        behind = [h for h in record.hosts if computes.get(h) in slow]
    act(task, record.jobid, deadlines.setup_timeout(record, lustre, behind))


@handles(DeadlineKind.PRERUN)
def prerun_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """PreRun (the mounts) took longer than ``rabbit.prerun_timeout``."""
    if (caught := caught_up(task, record, deadline)) is None:
        return
    record, _ = caught
    unmounted: list[str] = []
    if record.failure_tolerance > 0:
        unmounted = not_mounted(task, record)
    rabbits = rabbits_of(task, unmounted)
    down = rabbits_not_in_state(task.dws, name_of(record.jobid), "mounted")
    act(task, record.jobid, deadlines.prerun_timeout(record, unmounted, rabbits, down))


@handles(DeadlineKind.POSTRUN)
def postrun_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Unmounting took longer than ``rabbit.postrun_timeout``: skip data movement, drain."""
    if (caught := caught_up(task, record, deadline)) is None:
        return
    record, workflow = caught
    mounted = clientmounts_not_in_state(task.dws, name_of(record.jobid), "unmounted")
    partial = task.settings.pipeline.partial_epilog
    actions = deadlines.postrun_timeout(record, workflow, mounted, task.settings.rabbit, partial)
    act(task, record.jobid, actions)


@handles(DeadlineKind.TEARDOWN_AFTER)
def teardown_after(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """``rabbit.teardown_after`` passed since the job ran: tear down, skipping data movement."""
    workflow = read_workflow(task, record.jobid)
    act(task, record.jobid, deadlines.teardown_after(record, workflow, task.settings.rabbit))


@handles(DeadlineKind.TC)
def tc_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """A TransientCondition outlasted ``rabbit.tc_timeout``."""
    if (caught := caught_up(task, record, deadline)) is None:
        return
    record, _ = caught
    unmounted: list[str] = []
    if record.tc_since is not None and record.tc_prerun:
        unmounted = not_mounted(task, record)
    rabbits = rabbits_of(task, unmounted)
    act(task, record.jobid, deadlines.tc_timeout(record, unmounted, rabbits))
