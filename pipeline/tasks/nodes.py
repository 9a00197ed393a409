"""A job's RUN and CLEANUP: the VNI reservation, the node prologs that hold it, the epilogs.

Enqueued by the job-state hook (``pipeline.services.hooks``) when a job
reaches RUN or CLEANUP, and by the node workers as their tasks end (each
answer names the node task it ends, which crosses it out of the ledger).
Each holds the job's lock, reads what ``pipeline.states.slingshot`` and
``pipeline.states.nodes`` need, and performs what they decide.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from pipeline.errors import InputError, PermanentError
from pipeline.model.answers import Phase
from pipeline.model.hostlist import expand_hostlist
from pipeline.model.job import DeadlineKind, JobRecord
from pipeline.model.resource_set import ResourceSet
from pipeline.model.slingshot import vni_request
from pipeline.platform import nodework
from pipeline.platform.sending import dispatch, dispatch_nodes
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.states import cleanup as cleanup_states
from pipeline.states import nodes, slingshot
from pipeline.states import run as run_states
from pipeline.store import Deadline
from pipeline.store.marks import CLEANUP_FENCE
from pipeline.tasks.answers import settle
from pipeline.tasks.dws import SEND_NODES, act, ended, record_of
from pipeline.tasks.hwcoll import multicast_ask
from pipeline.tasks.timeouts import handles

log = logging.getLogger("coral2_pipeline.tasks")


def _stranger(task: PipelineTask, jobid: int, node: str, task_id: str) -> bool:
    """Whether the answer of ``node`` for ``jobid`` (ending node task ``task_id``) proves
    nothing (see :func:`_proof`)."""
    return _proof(task, jobid, node, task_id) is None


def _proof(
    task: PipelineTask, jobid: int, node: str, task_id: str, phase: Phase = Phase.PROLOG
) -> str | None:
    """What proves that ``node``, answering for ``jobid`` (ending node task ``task_id``),
    was sent the work: ``"ledger"`` (the ledger's entry of ``task_id`` names that node's
    queue and that job) or ``"record"`` (its entry crossed out — a copy of an answer —
    the job's record names that node among its nodes, with ``phase``'s work sent: the
    epilogs for ``clean``). None: nothing does, and nothing of the answer is counted nor
    crossed out; an answer for a job whose record names other nodes, or for a job with no record
    (long gone, or not run yet: Flux job ids are predictable), changes nothing and is
    set aside as a dead letter named after the node. The signature proved which node sent it
    (``pipeline.platform.signing``). The ledger is read first: a whole-machine job's
    record names every node, and reading it for each of its answers would grow with the
    square of the job's size."""
    queue = task.settings.pipeline.queues.node_prefix + node
    entry = task.store.ledger.get(task_id)
    if entry is not None:
        if entry.queue == queue and entry.kwargs.get("jobid") == jobid:
            return "ledger"
        why = (
            f"{node} answered for task {task_id}, which was sent to {entry.queue} for job "
            f"{entry.kwargs.get('jobid')}, not to {queue} for job {jobid}"
        )
    else:
        record = task.store.jobs.get(jobid)
        if record is None:
            # long gone, or not run yet (Flux job ids are predictable): counted for nothing,
            # and kept as a dead letter named after the node, so that a node answering
            # ahead of its jobs is seen
            why = (
                f"{node} answered for job {jobid}, which has no record (long gone, or not run yet)"
            )
        elif node in _sent_to(record, phase):
            return "record"
        else:
            why = f"{node} answered for job {jobid}, which does not run on it"
            if node in _sent_to(record, Phase.PROLOG):
                why = f"{node} answered the {phase} of job {jobid} before it was sent"
    request = {"task": task.name, "id": task.request.id, "kwargs": task.request.kwargs}
    raw = json.dumps(request, default=repr)
    task.store.dead_letters.add(f"{node}:answers", raw, f"refused: {why}")
    log.warning("%s: refused: %s", task.name, why)
    return None


def _sent_to(record: JobRecord, phase: Phase) -> set[str]:
    """The nodes ``record`` shows the work of ``phase`` was sent to."""
    state = record.slingshot
    if phase == Phase.CLEAN:
        return set(state.nodes) if state is not None and state.released else set()
    nodes = set(record.node_work.nodes if record.node_work else [])
    return nodes | set(state.nodes if state is not None else [])


def _vni_ask(task: PipelineTask, option: Any) -> run_states.VniAsk:
    """What the job asks of the VNI pool, as the cray-slingshot plugin reads its option."""
    settings = task.settings.cray_slingshot
    try:
        request = vni_request(option, settings.vnis_per_job)
    except InputError as exc:
        return run_states.VniAsk(0, settings.vni_pool, error=str(exc))
    return run_states.VniAsk(
        request.count, settings.vni_pool, request.reason, fatal=settings.vni_reserve_fatal
    )


@pipeline_task("job.run", queue="lifecycle", lock_job=True)
def run(
    task: PipelineTask,
    jobid: int,
    userid: int,
    R: dict[str, Any],
    option: Any = None,
    dw: bool = False,
    hwcoll: bool = False,
) -> None:
    """A job reached RUN (Flux holds it in the job-manager prolog): reserve its VNIs and
    its multicast addresses, then send ``job.prologs``, which sends each node its prolog
    and lets the job start once they have all answered."""
    if ended(task, jobid) or task.store.marks.fenced(jobid, CLEANUP_FENCE):
        # a copy (or a retry) after the job's CLEANUP began: reserve and send nothing
        log.info("job.run for job %s after its CLEANUP: nothing to do", jobid)
        return
    hosts = sorted(ResourceSet.parse(R).unique_hosts())
    record = record_of(task, jobid).model_copy(update={"userid": userid})
    actions = run_states.on_run(
        record,
        hosts=hosts,
        cxi_enable=task.settings.cray_slingshot.cxi_enable,
        vnis=_vni_ask(task, option),
        multicast=multicast_ask(task, record, len(hosts), hwcoll),
        prologs={"jobid": jobid, "R": R, "dw": dw},
    )
    act(task, jobid, actions)


@pipeline_task("job.restore", queue="lifecycle", lock_job=True)
def restore(
    task: PipelineTask,
    jobid: int,
    userid: int,
    R: dict[str, Any],
    vnis: list[int],
    reason: str = "",
    dw: bool = False,
    started: bool = False,
) -> None:
    """Flux runs the job with ``vnis`` (its ``cray-slingshot`` event) and the store lost
    its record (the bridge sends this after Redis restarted or lost its data): hold its
    VNIs again and, for a job that ``started``, record its node work, so that its CLEANUP
    undoes both."""
    if ended(task, jobid):
        return
    record = record_of(task, jobid).model_copy(update={"userid": userid})
    settings = task.settings.cray_slingshot
    actions = run_states.on_restore(
        record,
        hosts=sorted(ResourceSet.parse(R).unique_hosts()),
        cxi_enable=settings.cxi_enable,
        pool=settings.vni_pool,
        vnis=vnis,
        reason=reason,
        dw=dw,
        started=started,
    )
    act(task, jobid, actions)


@pipeline_task(run_states.PROLOGS, queue="lifecycle", lock_job=True)
def prologs(task: PipelineTask, jobid: int, R: dict[str, Any], dw: bool = False) -> None:
    """The job's reservations are made (``job.run``): post its events, then send each node
    its prolog (the job is released once they have all answered)."""
    if ended(task, jobid) or task.store.marks.fenced(jobid, CLEANUP_FENCE):
        log.info("job.prologs for job %s after its CLEANUP: nothing to do", jobid)
        return
    resources = ResourceSet.parse(R)
    cores = {host: len(resources.cores(host)) for host in resources.unique_hosts()}
    pipeline, conf = task.settings.pipeline, task.settings.hwcoll
    ready, stopped = _tallies(task, jobid)
    actions = run_states.on_prologs(
        record_of(task, jobid),
        cores=cores,
        dw=dw,
        clientmount=pipeline.clientmount,
        mounted=task.store.marks.is_set(jobid, "prolog-remove"),
        now=time.time(),
        timeout_s=pipeline.node_timeout,
        mount_timeout_s=task.settings.rabbit.prolog_timeout,
        hwcoll_url=conf.url or "",
        hwcoll_min_nodes=conf.min_job_nodes,
        ready=ready,
        stopped=stopped,
    )
    act(task, jobid, actions)


def _answered(task: PipelineTask, jobid: int, phase: Phase, node: str, task_id: str) -> None:
    """Count one node's answer without the job's lock, unless it comes from a stranger
    (:func:`pipeline.tasks.answers.settle`, the one place answers are counted). The count
    crosses the node task out of the ledger in the same transaction; should this run die
    before what follows, the answer's message is delivered again, and its copy (no ledger
    entry now) completes the phase again."""
    proof = _proof(task, jobid, node, task_id, phase)
    if proof is None:
        return
    ends = [task_id] if proof == "ledger" else []
    settle(task.app, task.store, jobid, phase, [node], ends)


@pipeline_task("job.prolog_done", queue="lifecycle")
def prolog_done(
    task: PipelineTask,
    jobid: int,
    node: str,
    task_id: str,
    error: str = "",
    error_type: str = nodes.PROLOG_EXCEPTION,
    late: bool = False,
) -> None:
    """A node's prolog ended (``error``: why it could not do its part); sent by the node.
    Counted without the job's lock: a whole-machine job gets one per node. ``late``: a
    copy that reached the node after the job's epilog, which it ignored."""
    if (late or error) and _stranger(task, jobid, node, task_id):
        return
    if late:
        task.store.ledger.done(task_id)
        return
    if error:
        nodework.trace("counted", "failed prolog", jobid, node, error)
        kwargs = {"jobid": jobid, "node": node, "error": error, "error_type": error_type}
        dispatch(task.app, task.store, "job.prolog_failed", kwargs)
        task.store.ledger.done(task_id)
        return
    _answered(task, jobid, Phase.PROLOG, node, task_id)


@pipeline_task("job.clientmount_done", queue="lifecycle")
def clientmount_done(
    task: PipelineTask, jobid: int, node: str, task_id: str, late: bool = False
) -> None:
    """A node stopped the clientmount service after the job's PreRun; sent by the node
    (``late``: a copy after the job's epilog, which it ignored)."""
    if late and _stranger(task, jobid, node, task_id):
        return
    if late:
        task.store.ledger.done(task_id)
        return
    _answered(task, jobid, Phase.STOPPED, node, task_id)


@pipeline_task(SEND_NODES, queue="lifecycle")
def send_nodes(
    task: PipelineTask,
    jobid: int,
    groups: list[list[Any]] | None = None,
    sends: list[list[Any]] | None = None,
) -> int:
    """Send a part of job ``jobid``'s node messages (``pipeline.tasks.dws.spread``):
    ``groups``, each ``[task name, kwargs, hostlist]`` (the task with those arguments on
    each node of the hostlist), or ``sends``, each ``[node, task name, kwargs]`` (as the
    previous release sent them). Without the job's lock: sending is all it does, and a
    copy sends copies, which the nodes and the counts take as such. Returns how many."""
    try:
        parts = [(str(node), str(name), dict(kwargs)) for node, name, kwargs in sends or []]
        for name, kwargs, hosts in groups or []:
            parts += [
                (node, str(name), {**kwargs, "hostname": node}) for node in expand_hostlist(hosts)
            ]
    except (TypeError, ValueError) as exc:
        why = (
            f"job {jobid}: job.send_nodes needs groups of [task name, kwargs, hostlist] "
            f"or sends of [node, task name, kwargs]: {exc}"
        )
        raise PermanentError(why) from exc
    dispatch_nodes(task.app, task.store, parts)
    return len(parts)


@pipeline_task("job.prolog_failed", queue="lifecycle", lock_job=True)
def prolog_failed(task: PipelineTask, jobid: int, node: str, error: str, error_type: str) -> None:
    """A node could not do its part of the job's prolog: fail the job, naming it."""
    act(task, jobid, nodes.on_prolog_failed(record_of(task, jobid), node, error, error_type))


@pipeline_task("job.answers_complete", queue="lifecycle", lock_job=True)
def answers_complete(task: PipelineTask, jobid: int) -> None:
    """Every node answered a phase of the job's node work: release it if that was all."""
    ready, stopped = _tallies(task, jobid)
    act(task, jobid, nodes.on_answers(record_of(task, jobid), ready, stopped))


def _tallies(task: PipelineTask, jobid: int) -> tuple[set[str], set[str]]:
    return task.store.tally.nodes(jobid, Phase.PROLOG), task.store.tally.nodes(jobid, Phase.STOPPED)


@pipeline_task("job.cleanup", queue="lifecycle", lock_job=True)
def cleanup(task: PipelineTask, jobid: int) -> None:
    """A job reached CLEANUP: its VNIs go to quarantine and each node gets its epilog
    (nothing in Flux waits for them; :func:`pipeline.states.cleanup.on_cleanup`). Its
    first step fences the job's RUN: a ``job.run`` or ``dws.setup`` that comes later (a
    retry, a late copy, one the queue put behind it) does nothing."""
    # not a mark of work done but a fence, so first; up as long as a finished job's record
    task.store.marks.fence(jobid, CLEANUP_FENCE, max(task.settings.pipeline.retention, 3600.0))
    record = record_of(task, jobid)
    recorded = task.store.jobs.get(jobid) is not None
    clientmount = task.settings.pipeline.clientmount
    actions = cleanup_states.on_cleanup(record, recorded=recorded, clientmount=clientmount)
    if actions:
        act(task, jobid, actions)


@pipeline_task("job.epilog_done", queue="lifecycle")
def epilog_done(
    task: PipelineTask, jobid: int, node: str, task_id: str, busy: list[str] | None = None
) -> None:
    """A node's epilog ended; ``busy``: its CXI services still in use. Sent by the node.
    Counted without the job's lock, as the prolog's answers are: a whole-machine job gets
    one per node, and the one that completes the count confirms them all at once
    (``job.epilogs_complete``). A node whose services are busy goes to the locked
    ``job.epilog_busy``, which retries it and, past ``cxi-busy-timeout``, drains it."""
    if not busy:
        _answered(task, jobid, Phase.CLEAN, node, task_id)
        return
    if _proof(task, jobid, node, task_id, Phase.CLEAN) is not None:
        nodework.trace("counted", "epilog answer", jobid, node, f"busy={busy}")
        kwargs = {"jobid": jobid, "node": node, "busy": list(busy)}
        dispatch(task.app, task.store, "job.epilog_busy", kwargs)
        task.store.ledger.done(task_id)


@pipeline_task("job.epilog_busy", queue="lifecycle", lock_job=True)
def epilog_busy(task: PipelineTask, jobid: int, node: str, busy: list[str]) -> None:
    """``node``'s epilog found the job's CXI services ``busy``: try again later, or drain it."""
    record = record_of(task, jobid)
    act(task, jobid, slingshot.on_node_clean(record, node, busy, time.time(), _busy(task)))


@pipeline_task("job.epilogs_complete", queue="lifecycle", lock_job=True)
def epilogs_complete(task: PipelineTask, jobid: int) -> None:
    """Every node answered the job's epilog: confirm those clean, free the VNIs once all are."""
    clean = task.store.tally.nodes(jobid, Phase.CLEAN)
    act(task, jobid, slingshot.on_clean(record_of(task, jobid), clean))


@pipeline_task("job.node_swept", queue="lifecycle", lock_job=True)
def node_swept(task: PipelineTask, jobid: int, node: str) -> None:
    """``coral2-pipeline slingshot clean`` swept ``node``: none of the job's CXI services is
    left there (a node drained for busy services is confirmed clean this way)."""
    task.store.tally.add(jobid, Phase.CLEAN, node)
    clean = task.store.tally.nodes(jobid, Phase.CLEAN)
    act(task, jobid, slingshot.on_clean(record_of(task, jobid), clean))


def _busy(task: PipelineTask) -> slingshot.BusyPolicy:
    pipeline = task.settings.pipeline
    return slingshot.BusyPolicy(pipeline.cxi_busy_timeout, pipeline.cxi_busy_retry)


@handles(nodes.DEADLINE)
def node_prolog(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """The job's nodes did not all answer in ``node-timeout``: fail it, naming them."""
    ready, stopped = _tallies(task, record.jobid)
    act(task, record.jobid, nodes.on_timeout(record, ready, stopped))


@handles(nodes.MOUNT_DEADLINE)
def dws_environment(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """A ``#DW`` job's file systems were not mounted in ``rabbit.prolog_timeout``."""
    act(task, record.jobid, nodes.on_mount_timeout(record))


@handles(DeadlineKind.CXI_RETRY)
def cxi_retry(task: PipelineTask, record: JobRecord, deadline: Deadline) -> None:
    """Housekeeping: send the CXI epilog again to the nodes whose services were busy."""
    clean = task.store.tally.nodes(record.jobid, Phase.CLEAN)
    act(task, record.jobid, slingshot.on_retry(record, clean))
