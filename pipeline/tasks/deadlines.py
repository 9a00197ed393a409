"""What each lifecycle deadline does when it fires (flux-coral2 §3.5 timers, §3.6 TC sweep).

Fired by ``timeouts.fire`` under the job's lock, only while the deadline's
token is still in the job record. Node loss within ``dw_failure_tolerance``
is tolerated as flux-coral2 does it: a ``dws-node-failure`` exception (sev 1)
naming the lost nodes and ``forceReady`` on the Workflow; beyond it, the
fatal exception of the timer.
"""

from __future__ import annotations

from pipeline.errors import NotFound
from pipeline.model.breakdown import check_is_lustre
from pipeline.model.hostlist import encode_hostlist, unique_hostlist
from pipeline.model.job import JobRecord
from pipeline.states.actions import SendOnce, UpdateJob, exception
from pipeline.store import Deadline
from pipeline.tasks.act import perform
from pipeline.tasks.base import PipelineTask
from pipeline.tasks.dws import mapping_of, rabbit_settings, teardown_now
from pipeline.tasks.health import WORKFLOW_LABEL, clientmounts_not_in_state, drain_unmounted
from pipeline.tasks.timeouts import handles


def node_failure(task: PipelineTask, record: JobRecord, nodes: list[str]) -> bool:
    """``notify_of_node_failure``: return True when the job can go on without ``nodes``."""
    failed = sorted(set(record.failed_nodes) | set(nodes))
    task.store.jobs.update(record.jobid, lambda r: r.model_copy(update={"failed_nodes": failed}))
    if len(failed) > record.failure_tolerance:
        return False
    batch = encode_hostlist(sorted(set(nodes)))
    perform(
        task.store,
        task.dws,
        record.jobid,
        [exception(record.jobid, "dws-node-failure", 1, batch, f"exception:node-failure:{batch}")],
    )
    task.dws.patch("workflows", f"fluxjob-{record.jobid}", {"spec": {"forceReady": True}})
    return True


def _fatal(task: PipelineTask, record: JobRecord, kind: str, severity: int, note: str) -> None:
    perform(
        task.store,
        task.dws,
        record.jobid,
        [exception(record.jobid, kind, severity, note, f"exception:{kind}")],
    )


@handles("setup_timeout")
def setup_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Setup took longer than ``rabbit.setup_timeout``."""
    name = f"fluxjob-{record.jobid}"
    note = "File system creation took too long"
    try:
        workflow = task.dws.get_workflow(name)
    except NotFound:
        return
    breakdowns = task.dws.directive_breakdowns(workflow)
    lustre = any(
        check_is_lustre(((b.get("status") or {}).get("storage") or {}).get("allocationSets") or [])
        for b in breakdowns
    )
    if record.failure_tolerance <= 0 or lustre:
        _fatal(task, record, "dws-timeout", 0, note)
        return
    servers, _ = task.dws.list_objects("servers", selector=f"{WORKFLOW_LABEL}={name}")
    slow: set[str] = set()
    for server in servers:
        for aset in (server.get("status") or {}).get("allocationSets") or []:
            slow |= {
                r
                for r, entry in (aset.get("storage") or {}).items()
                if not (entry or {}).get("ready")
            }
    mapping_path = rabbit_settings(task).mapping
    behind = [
        h for h in record.hosts if mapping_path and mapping_of(mapping_path).computes.get(h) in slow
    ]
    if not node_failure(task, record, behind):
        _fatal(task, record, "dws-timeout", 0, note)


@handles("prerun_timeout")
def prerun_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """PreRun (the mounts) took longer than ``rabbit.prerun_timeout``."""
    note = "timed out waiting for mounts"
    if record.failure_tolerance <= 0:
        _fatal(task, record, "dws-timeout", 0, note)
        return
    nodes = clientmounts_not_in_state(task, f"fluxjob-{record.jobid}", "mounted")
    _badrabbit(task, record, nodes)
    if not node_failure(task, record, nodes):
        _fatal(task, record, "dws-timeout", 0, note)


def _badrabbit(task: PipelineTask, record: JobRecord, nodes: list[str]) -> None:
    if nodes:
        payload = {"targets": unique_hostlist(nodes), "key": "badrabbit", "value": "bad"}
        perform(
            task.store,
            task.dws,
            record.jobid,
            [SendOnce("set-property", payload, f"badrabbit:{payload['targets']}")],
        )


@handles("postrun_timeout")
def postrun_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Unmounting took longer than ``rabbit.postrun_timeout``: skip data movement, drain."""
    teardown_now(task, record.jobid)
    actions = [
        exception(
            record.jobid,
            "rabbit-timeout",
            0,
            "unmounts timed out, skipping data movement",
            "exception:rabbit-timeout",
        )
    ]
    perform(task.store, task.dws, record.jobid, actions + drain_unmounted(task, record))


@handles("teardown_after")
def teardown_after(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """``rabbit.teardown_after`` passed since the job ran: tear down, skipping data movement."""
    teardown_now(task, record.jobid)
    _fatal(task, record, "teardown-timeout", 1, "skipping rabbit data movement")


@handles("tc_timeout")
def tc_timeout(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """A TransientCondition outlasted ``rabbit.tc_timeout``."""
    if record.tc_since is None:
        return
    clear = [UpdateJob({"tc_since": None, "tc_message": "", "tc_prerun": False})]
    if record.tc_prerun:
        nodes = clientmounts_not_in_state(task, f"fluxjob-{record.jobid}", "mounted")
        _badrabbit(task, record, nodes)
        if node_failure(task, record, nodes):
            perform(task.store, task.dws, record.jobid, clear)
            return
    note = (
        "DWS/Rabbit interactions failed: workflow in 'TransientCondition' state too long: "
        f"{record.tc_message}"
    )
    perform(
        task.store,
        task.dws,
        record.jobid,
        [exception(record.jobid, "exception", 0, note, "exception:tc"), *clear],
    )
