"""Observation tasks enqueued by the watcher: one Workflow, or one rabbit's Storage.

``dws.observe`` follows the idempotent task pattern: it clears the job's
coalescing mark as it starts (``clears``: in the round trip that takes the
job's lock, so a change during the run queues another observe), re-reads
the Workflow from the API server — never trusting the event — records
what it saw in the job record, then runs the pure
``pipeline.states.observed.decide`` on that fresh read and performs the actions
(each idempotent, so a second observe of the same state changes nothing).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pipeline.errors import Invalid, KubeError, NotFound
from pipeline.model.workflow import workflow_name
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.states import hooks
from pipeline.states.observed import decide
from pipeline.states.rabbits import mapping_drift, offline_computes
from pipeline.states.snapshot import Snapshot, WorkflowState
from pipeline.store import JobRecord, Keys
from pipeline.store.resync import LOST_AFTER_S, UNFINISHED_AFTER_S, Notes
from pipeline.tasks.dws import act, mapping_of
from pipeline.tasks.rabbits import tell_flux

log = logging.getLogger("coral2_pipeline.observe")


@pipeline_task("dws.observe", queue="lifecycle", lock_job=True, clears=Keys.observe_pending)
def observe(task: PipelineTask, jobid: int) -> str | None:
    """Re-read ``fluxjob-<jobid>`` and record its DWS state; return it (None when gone).

    Enqueued by the watcher on every Workflow event (coalesced per job).
    """
    try:
        workflow = task.dws.get_workflow(workflow_name(jobid))
    except NotFound:
        record = task.store.jobs.get(jobid)
        tracked = record is not None or task.store.jobs.tracked(jobid)
        act(task, jobid, hooks.on_workflow_gone(record, jobid, tracked))
        return None
    return record_observation(task, jobid, workflow)


def record_observation(task: PipelineTask, jobid: int, workflow: dict[str, Any]) -> str:
    """Record ``workflow`` (just read) as the job's DWS state, decide on it and act; return
    the state's summary. The caller holds the job's lock."""
    store = task.store
    status: dict[str, Any] = workflow.get("status") or {}
    state = status.get("state") or "new"
    summary = f"{state}:{'ready' if status.get('ready') else status.get('status') or 'pending'}"
    rv = str(workflow["metadata"].get("resourceVersion", ""))
    record = store.jobs.update(
        jobid,
        lambda r: r.model_copy(
            update={"state": summary, "observed_at": time.time(), "observed_rv": rv}
        ),
        default=JobRecord(jobid=jobid, workflow=workflow["metadata"]["name"]),
    )
    if record is not None and not task.settings.pipeline.observe_only:
        snapshot = _snapshot(task, workflow)
        settings = task.settings.rabbit
        actions = decide(snapshot, record, time.time(), settings)
        act(task, jobid, actions, workflow)
    # this version is dealt with once the run settles (dws.resync observes again a job
    # whose last observe read a version and never got that far)
    task.after_work(lambda pipe: store.jobs.handled_in(pipe, jobid, rv))
    return summary


def _snapshot(task: PipelineTask, workflow: dict[str, Any]) -> Snapshot:
    """Read what the current state's decision needs along with the Workflow."""
    bare = Snapshot(workflow)
    if bare.deleting:  # its children are going too; the decision needs none of them
        return bare
    breakdowns: tuple[dict[str, Any], ...] = ()
    token = None
    if bare.complete(WorkflowState.PROPOSAL):
        breakdowns = tuple(task.dws.directive_breakdowns(workflow))
    refused = None
    if bare.complete(WorkflowState.PRE_RUN):
        try:
            token = task.dws.workflow_token(workflow)
        except Invalid as exc:
            refused = str(exc)
    movements: tuple[dict[str, Any], ...] = ()
    limit = task.settings.rabbit.save_datamovements
    if bare.complete(WorkflowState.DATA_OUT) and limit > 0:
        try:
            movements = tuple(task.dws.datamovements(workflow["metadata"]["name"], limit))
        except KubeError as exc:  # flux-coral2: a failed list saves []
            log.warning("listing nnfdatamovements of %s: %s", workflow["metadata"]["name"], exc)
    return Snapshot(
        workflow,
        breakdowns=breakdowns,
        workflow_token=token,
        token_refused=refused,
        datamovements=movements,
    )


@pipeline_task("storage.observe", queue="housekeeping")
def observe_storage(task: PipelineTask, name: str) -> dict[str, Any] | None:
    """Record the health of rabbit ``name`` and tell Flux what changed in it.

    Enqueued by the watcher on every Storage event and for every Storage when
    it starts. Flux hears of drains, ``badrabbit`` and ssd status only when
    they change (:mod:`pipeline.tasks.rabbits`).
    """
    store = task.store
    try:
        storage = task.dws.get("storages", name)
    except NotFound:
        store.watch.forget_rabbit(name)
        return None
    status = storage.get("status") or {}
    annotations = (storage.get("metadata") or {}).get("annotations") or {}
    health: dict[str, Any] = {
        "status": status.get("status", "Unknown"),
        "state": storage.get("spec", {}).get("state", "Enabled"),
        "not_ready": sorted(offline_computes(storage)),
    }
    for field, value in (
        ("message", status.get("message")),
        ("disable_reason", annotations.get("disable_reason")),
        ("disable_date", annotations.get("disable_date")),
    ):
        if value:
            health[field] = str(value)[:500]
    if task.settings.rabbit.mapping:  # where the rabbitmapping no longer says the truth
        mapped = mapping_of(task.settings.rabbit.mapping).computes
        if drift := mapping_drift(name, storage, mapped):
            health["drift"] = drift
    store.watch.set_rabbit(name, health)
    told = tell_flux(task, name, storage)
    if told is not None:
        health["told"] = told
    return health


def seen_entry(workflow: dict[str, Any], now: float) -> str:
    """The watcher's note of a Workflow event: ``"<resourceVersion> <epoch s>"``."""
    return f"{workflow['metadata'].get('resourceVersion', '')} {now:.3f}"


#: The most due jobs one ``dws.resync`` pass looks at (the rest wait for the next pass).
DUE_PER_PASS = 1000


def _note(raw: str) -> tuple[str, float] | None:
    """``"<resourceVersion> <epoch s>"`` as (resourceVersion, epoch s); None if unreadable."""
    rv, _, at = raw.partition(" ")
    try:
        return rv, float(at)
    except ValueError:
        return None


def next_look(notes: Notes, now: float) -> tuple[bool, float | None]:
    """Whether ``dws.resync`` observes a job with ``notes`` now, and when it looks at the
    job again (None: not until a note changes)."""
    seen = _note(notes.seen)
    observed_rv, observed_at = _note(notes.observed) or ("", 0.0)
    due: list[float] = []
    if seen is not None and (not notes.tracked or seen[0] != observed_rv):
        due.append(seen[1] + LOST_AFTER_S)  # an event no observe read: lost, or a stray
    if notes.tracked and observed_at > 0 and notes.handled != observed_rv:
        due.append(observed_at + UNFINISHED_AFTER_S)  # 0: no Workflow read yet
    if not due:
        return False, None
    if min(due) < now:
        return True, now + LOST_AFTER_S  # then see whether that observe happened
    return False, min(due)


@pipeline_task("dws.resync", queue="housekeeping", max_attempts=3)
def resync(task: PipelineTask, full: bool = False) -> int:
    """Enqueue ``dws.observe`` for each job whose latest Workflow event went unobserved,
    or whose last observe did not finish.

    The watcher is edge-triggered: one lost observe (a worker killed before
    Redis forgot its message, an enqueue that failed in a broker outage)
    would leave a Workflow that waits for us — Proposal complete, say —
    waiting forever, since nothing about it changes again. This
    level-triggered pass (beat runs it every second,
    ``beat_schedules/schedule.py``) compares, per job, the resourceVersion
    of the latest event the watcher saw (``<prefix>:workflow-seen``) with
    the one its last observe read (``observed_rv``); a difference older than
    ``LOST_AFTER_S`` is a lost observe. An observe that read a version and
    did not act on it to the end (its actions failed for good) leaves
    ``<prefix>:handled`` behind its read: the job is observed again
    ``UNFINISHED_AFTER_S`` after that read. A job one of whose events the
    watcher itself never saw is found by ``housekeeping.stale_sweep``'s list
    of every Workflow. An event of a job with no tracked record is observed
    so that it is tracked or finished. The coalescing mark keeps a job from
    being queued twice.

    A pass looks only at the jobs whose notes changed into something that is
    now due (``<prefix>:resync-due``, :mod:`pipeline.store.resync`), so it
    costs what changed, not what is in flight: jobs waiting on DWS or on Flux
    cost nothing — no read, no observe, no API request. With ``full`` (beat:
    every few minutes) it looks at every job any note names, the backstop
    for a due time a crash or an older version never wrote. Returns how many
    were enqueued.
    """
    store = task.store
    now = time.time()
    due = (
        store.resync.every_note()
        if full
        else store.resync.notes(store.resync.due(now, DUE_PER_PASS))
    )
    moves: list[tuple[int, Notes, float | None]] = []
    count = 0
    for jobid, notes in sorted(due.items()):
        observe_now, again = next_look(notes, now)
        if observe_now and store.watch.mark_pending(jobid):
            task.enqueue("dws.observe", jobid=jobid)
            count += 1
        moves.append((jobid, notes, again))
    store.resync.settle(moves)
    if count:  # the journal says what it did (the run itself is not logged: quiet.py)
        log.info("dws.resync: observing %d job(s) whose Workflow event went unobserved", count)
    return count
