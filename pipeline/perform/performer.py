"""Carry out the actions ``pipeline.states`` decided, each one idempotently.

:func:`perform` dispatches the closed :data:`~pipeline.states.actions.Action`
union with ``match``; ``assert_never`` makes mypy prove every action is
handled. An action may end the list: a refusal by DWS (the refusal's
exception is sent), a Workflow found gone (the action's ``if_gone`` is
performed instead), or a duplicate hook that finds the Workflow moved on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, NoReturn, assert_never

from pipeline.clients.fabric import FabricManager
from pipeline.clients.k8s import DwsClient
from pipeline.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    NotFound,
    PermanentError,
    TemporaryError,
    VniError,
)
from pipeline.model.answers import Phase
from pipeline.model.hwcoll import redact
from pipeline.model.job import JobChanges, JobRecord
from pipeline.model.node_messages import clientmount_stop
from pipeline.model.told import Change, Told
from pipeline.model.workflow import ready_since, state_of
from pipeline.perform import deadlines as timeouts
from pipeline.perform.fabric import release, reserve
from pipeline.states import rabbits as rabbit_rules
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    ConfirmDestroyed,
    CreateRecord,
    CreateWorkflow,
    DeleteWorkflow,
    DisableComputes,
    DisableRabbit,
    DisarmDeadline,
    ExpectAnswers,
    FinishJob,
    ForceReady,
    ForgetAnswers,
    FreeRabbits,
    HoldBadRabbit,
    HoldRabbits,
    MarkDone,
    MarkMounted,
    PatchComputes,
    PatchDesiredState,
    PatchServers,
    RabbitDaemonDown,
    Release,
    ReleaseMulticast,
    ReleaseVnis,
    RemoveFinalizer,
    ReserveMulticast,
    ReserveVnis,
    SendNodeTask,
    SendOnce,
    SendTask,
    TellFlux,
    UpdateJob,
)
from pipeline.states.hooks import name_of, refused
from pipeline.states.slingshot import outcome as slingshot_outcome
from pipeline.store import OutboxMessage, Store

log = logging.getLogger("coral2_pipeline.act")

#: How node tasks are sent: each (node, task name, kwargs), all in one go.
SendNode = Callable[[Sequence[tuple[str, str, dict[str, Any]]]], object]
#: How a pipeline task is sent: its name and kwargs.
SendTaskBy = Callable[[str, dict[str, Any]], object]
#: The fabric manager's client, made when first needed.
FabricBy = Callable[[], FabricManager]
#: The actions that say work is done: performed after all the others of their list.
MARKS = (MarkDone, FinishJob, ForgetAnswers)

#: Called before each action (and once after the last, with None) of every list
#: performed, when set: what a test or a chaos run uses to make a task die between two
#: actions (:func:`set_between`). None in production: nothing of the product sets it.
BETWEEN: Callable[[int, Action | None], None] | None = None


def set_between(hook: Callable[[int, Action | None], None] | None) -> None:
    """Call ``hook`` between any two actions of every list performed in this process (None:
    stop). A worker plugin (``coral2_pipeline.worker`` entry points) installs one as the
    worker starts; a test, around what it drives."""
    global BETWEEN  # noqa: PLW0603 - the process's one hook, read on every action
    BETWEEN = hook


class _Stop(Exception):
    """The rest of the actions is not to be done; ``done``: nothing went wrong (a
    duplicate found its work done), else the list failed (refused, Workflow gone)."""

    def __init__(self, *, done: bool) -> None:
        super().__init__()
        self.done = done


def _updater(changes: JobChanges) -> Callable[[JobRecord], JobRecord]:
    def change(record: JobRecord) -> JobRecord:
        return record.model_copy(update=dict(changes))

    return change


class _Performer:
    def __init__(
        self,
        store: Store,
        dws: DwsClient,
        jobid: int,
        workflow: dict[str, Any] | None,
        retention_s: float,
        send_node: SendNode | None,
        node_prologs: bool = False,
        send_task: SendTaskBy | None = None,
        fabric: FabricBy | None = None,
    ) -> None:
        self.store, self.dws, self.jobid = store, dws, jobid
        self.fabric = fabric
        self.node_prologs = node_prologs
        self.send_node = send_node
        self.send_task = send_task
        self.name = name_of(jobid)
        self.known = workflow  # the copy the first Workflow change may start from
        self.retention_s = retention_s

    def _current(self) -> dict[str, Any] | None:
        current, self.known = self.known, None
        return current

    def _count_transition(self, state: str, workflow: dict[str, Any] | None) -> None:
        """Count the time from DWS marking ``state`` ready to our move out of it, when the
        copy the move started from shows it (the transition histogram), and put the state
        in the job's timeline."""
        ready = ready_since(workflow, state)
        if ready is None or workflow is None:
            return
        now = time.time()
        self.store.metrics.observe_transition(state, now - ready)
        elapsed = (workflow.get("status") or {}).get("elapsedTimeLastState")
        took = f" after {elapsed}" if elapsed else ""
        line = f"{state} ready{took}; moved on {(now - ready) * 1000:.0f} ms later"
        self.store.timeline.note(self.jobid, "dws", line, at=ready)

    def _exists(self) -> bool:
        """Whether the Workflow is there to stay: one being deleted counts as gone (its
        children go first, so a child's 404 means the same)."""
        try:
            workflow = self.dws.get_workflow(self.name)
        except NotFound:
            return False
        return not (workflow.get("metadata") or {}).get("deletionTimestamp")

    def _instead(self, actions: Sequence[Action] | None, error: Exception) -> NoReturn:
        """Perform ``actions`` instead of the rest (None: raise ``error``)."""
        if actions is None:
            raise error
        self.run(actions)
        raise _Stop(done=False) from error

    def run(self, actions: Sequence[Action]) -> None:
        """Perform the work of ``actions`` in order, then the marks that say it is done
        (:data:`MARKS`) in order: a task killed between two actions never leaves a mark
        whose work it did not do."""
        work = [a for a in actions if not isinstance(a, MARKS)]
        marks = [a for a in actions if isinstance(a, MARKS)]
        self._in_order(work)
        self._in_order(marks)
        if BETWEEN is not None:
            BETWEEN(self.jobid, None)  # after the last action: the task may still die

    def _in_order(self, actions: Sequence[Action]) -> None:
        sends: list[tuple[OutboxMessage, str]] = []  # consecutive SendOnce: one round trip
        to_nodes: list[tuple[str, str, dict[str, Any]]] = []  # consecutive SendNodeTask
        for index, action in enumerate(actions):
            if BETWEEN is not None and not sends and not to_nodes:
                BETWEEN(self.jobid, action)
            if isinstance(action, SendNodeTask):
                to_nodes.append((action.node, action.name, action.kwargs))
                if index + 1 == len(actions) or not isinstance(actions[index + 1], SendNodeTask):
                    self._send_nodes(to_nodes)
                    to_nodes = []
                continue
            if isinstance(action, SendOnce):
                sends.append((OutboxMessage(action.kind, self.jobid, action.payload), action.mark))
                if index + 1 == len(actions) or not isinstance(actions[index + 1], SendOnce):
                    appended = self.store.outbox.append_all_once(self.jobid, sends)
                    for (message, _mark), entry in zip(sends, appended, strict=True):
                        if entry is not None:  # sent now, not by an earlier run
                            self.store.timeline.note(self.jobid, "sent", sent_line(message))
                    sends = []
                continue
            self.one(action)

    def one(self, action: Action) -> None:
        store, dws, name, job = self.store, self.dws, self.name, str(self.jobid)
        match action:
            case CreateRecord(record):
                store.jobs.create(record)
            case UpdateJob(changes) | MarkDone(changes):
                store.jobs.update(self.jobid, _updater(changes))
            case FinishJob():
                store.jobs.finish(self.jobid, self.retention_s)
                store.tally.forget(self.jobid)  # the prolog's: the epilog's may still come
            case ForgetAnswers(phase):
                store.tally.forget(self.jobid, phase)
            case CreateWorkflow(body, refused_as):
                try:
                    dws.create_workflow(body)
                except AlreadyExists:
                    pass
                except Forbidden as exc:
                    self._instead(refused(self.jobid, refused_as, str(exc)), exc)
            case PatchDesiredState(expected, desired, if_moved_on, if_gone):
                self._move(expected, desired, if_moved_on, if_gone)
            case PatchServers(server, namespace, sets, if_gone):
                try:
                    dws.patch_servers(server, sets, namespace=namespace)
                except NotFound as exc:
                    if self._exists():
                        raise
                    self._instead(if_gone, exc)
            case PatchComputes(hosts):
                dws.patch_computes(name, [{"name": h} for h in hosts])
            case ForceReady():
                dws.patch("workflows", name, {"spec": {"forceReady": True}})
            case RemoveFinalizer():
                with suppress(NotFound):
                    dws.remove_finalizer(name, current=self._current())
            case DeleteWorkflow():
                current = self._current()
                with suppress(NotFound):
                    current = current or dws.get_workflow(name)
                    dws.remove_finalizer(name, current=current)
                if dws.delete_workflow(name):
                    self._count_transition("Teardown", current)
            case DisableComputes(nodes):
                store.systemstatus.disable(list(nodes))  # until the journal shows the undrain
                try:
                    disabled = {"data": {"nodes": dict.fromkeys(nodes, "Disabled")}}
                    dws.patch_system_status(disabled)
                except NotFound:  # no SystemStatus default (nnf runs without): the drains
                    # that follow in the list still go to Flux; status says it is missing
                    log.warning(
                        "job %s: no SystemStatus default to disable %s in", self.jobid, nodes
                    )
                    store.systemstatus.note_missing(True)
            case DisableRabbit(rabbit, reason, date):
                body = {
                    "metadata": {"annotations": {"disable_reason": reason, "disable_date": date}},
                    "spec": {"state": "Disabled"},
                }
                with suppress(NotFound):
                    dws.patch_storage(rabbit, body)
            case TellFlux(rabbit, before, change):
                store.told.replace(rabbit, before, change)
            case HoldBadRabbit(rabbit, computes):
                epoch = store.resource_log.epoch()
                store.told.change(rabbit, lambda told: Change([], told.hold(computes, epoch)))
            case HoldRabbits(rabbits):
                self._rabbits(rabbits, lambda told, epoch: rabbit_rules.hold(told, job, epoch))
            case RabbitDaemonDown(rabbits):
                self._rabbits(rabbits, rabbit_rules.daemon_down)
            case FreeRabbits(rabbits):
                self._rabbits(rabbits, lambda told, epoch: rabbit_rules.free(told, job, epoch))
            case SendOnce(kind, payload, mark):
                message = OutboxMessage(kind, self.jobid, payload)
                if store.outbox.append_once(message, mark) is not None:
                    store.timeline.note(self.jobid, "sent", sent_line(message))
            case ArmDeadline(kind, after_s, token):
                timeouts.arm(store, self.jobid, kind, after_s, token)
            case DisarmDeadline(kind):
                timeouts.disarm(store, self.jobid, kind)
            case SendNodeTask(node, task_name, kwargs):
                self._send_nodes([(node, task_name, kwargs)])
            case ReleaseVnis(nodes):
                with suppress(VniError):  # unknown job: released already
                    store.vnipool.release(self.jobid, nodes)
            case ConfirmDestroyed(nodes):
                store.vnipool.confirm_destroyed(self.jobid, *nodes)
            case Release(status, note, hosts):
                store.releases.put(self.jobid, status, note, hosts if self.node_prologs else ())
            case ExpectAnswers(count, phase):
                store.tally.expect(self.jobid, count, phase)
            case SendTask(task_name, kwargs):
                if self.send_task is None:
                    raise PermanentError(f"job {self.jobid}: no way to send {task_name}")
                self.send_task(task_name, kwargs)
            case ReserveVnis(count, pool, reason, nodes, fatal):
                self._reserve_vnis(count, pool, reason, list(nodes), fatal)
            case ReserveMulticast(fm_job_id, limit, step):
                client = self._fabric()
                reserve(store, client, self.jobid, fm_job_id, limit, step)
            case ReleaseMulticast(fm_job_id, step):
                release(store, self._fabric(), fm_job_id, step)
            case MarkMounted():
                answered = sorted(store.tally.flag(self.jobid, "mounted", Phase.PROLOG))
                name, stop = clientmount_stop(self.jobid)
                self._send_nodes([(node, name, stop) for node in answered])
            case _:
                assert_never(action)

    def _rabbits(self, rabbits: Sequence[str], rule: Callable[[Told, str], Change]) -> None:
        """Apply ``rule`` to each rabbit's record of what Flux was told, in this Flux
        incarnation, sending what it says."""
        epoch = self.store.resource_log.epoch()
        for rabbit in sorted(set(rabbits)):
            self.store.told.change(rabbit, lambda told: rule(told, epoch))

    def _fabric(self) -> FabricManager:
        if self.fabric is None:
            raise PermanentError(f"job {self.jobid}: no way to reach the fabric manager")
        return self.fabric()

    def _reserve_vnis(
        self, count: int, pool: str, reason: str, nodes: list[str], fatal: bool
    ) -> None:
        """Reserve the job's VNIs as the cray-slingshot plugin does (the pool's error makes
        an empty reservation, failed when ``fatal``) and write the outcome in its record;
        a record that holds one already is a re-run's (the pool's reserve is idempotent
        per job too)."""
        record = self.store.jobs.get(self.jobid)
        if record is not None and record.slingshot is not None:
            return
        vnis: list[int] = []
        failed = False
        if count:
            self.store.vnipool.configure(pool)
            try:
                vnis = self.store.vnipool.reserve(self.jobid, count)
            except VniError as exc:
                reason, failed = str(exc), fatal
        state = slingshot_outcome(vnis, reason, fatal=failed, nodes=nodes)
        self.store.jobs.update(self.jobid, _updater({"slingshot": state}))

    def _send_nodes(self, sends: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        if not sends:
            return
        if self.send_node is None:
            node, task_name, _ = sends[0]
            raise PermanentError(f"job {self.jobid}: no way to send {task_name} to {node}")
        self.send_node([(node, name, {"hostname": node, **kwargs}) for node, name, kwargs in sends])

    def _move(
        self,
        expected: str | None,
        desired: str,
        if_moved_on: str,
        if_gone: tuple[Action, ...] | None,
    ) -> None:
        try:
            moved, now = self.dws.move_desired_state(
                self.name, desired, expected_state=expected, current=self._current()
            )
            if now:  # the answer still shows the state it moved out of, ready
                self._count_transition(expected or state_of(moved), moved)
        except NotFound as exc:
            self._instead(if_gone, exc)
        except Conflict as exc:
            if if_moved_on == "continue":
                log.info("job %s: %s (the workflow moved on)", self.jobid, exc)
                return
            try:
                asked = (self.dws.get_workflow(self.name).get("spec") or {}).get("desiredState")
            except NotFound as gone:
                self._instead(if_gone, gone)
            if asked != expected:
                raise _Stop(done=True) from exc  # a duplicate: the Workflow has moved on
            # still asked for ``expected``: it kept changing under the patch; try again later
            raise TemporaryError(f"job {self.jobid}: {exc}") from exc


def sent_line(message: OutboxMessage) -> str:
    """A message to Flux, in one line of a job's timeline, its secrets redacted."""
    payload = redact({k: v for k, v in message.payload.items() if k != "id"})
    text = json.dumps(payload, sort_keys=True, default=str)
    return f"{message.kind} {text[:300]}{'…' if len(text) > 300 else ''}"


def perform(
    store: Store,
    dws: DwsClient,
    jobid: int,
    actions: Sequence[Action],
    *,
    workflow: dict[str, Any] | None = None,
    retention_s: float = 0.0,
    send_node: SendNode | None = None,
    node_prologs: bool = False,
    send_task: SendTaskBy | None = None,
    fabric: FabricBy | None = None,
) -> bool:
    """Perform ``actions`` for ``jobid`` in order; return False when one failed them (a
    refusal, a Workflow found gone), True when all were done or a duplicate hook found
    them done already.

    ``workflow``: the Workflow the actions were decided on, just read; the
    first change to it starts from that copy instead of reading it again
    (resourceVersion-guarded, so a stale copy costs a conflict, not a lost
    update). Later changes read afresh. ``retention_s``: how long a finished
    job's record is kept (``pipeline.retention``); ``send_node``: how node tasks
    are sent; ``node_prologs``: verdicts are written for each node's per-rank prolog too;
    ``send_task``: how pipeline tasks are sent.
    """
    try:
        performer = _Performer(
            store,
            dws,
            jobid,
            workflow,
            retention_s,
            send_node,
            node_prologs,
            send_task,
            fabric,
        )
        performer.run(actions)
    except _Stop as stop:
        return stop.done
    return True
