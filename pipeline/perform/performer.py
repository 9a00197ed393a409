"""Carry out the actions ``pipeline.states`` decided, each one idempotently.

:func:`perform` dispatches the closed :data:`~pipeline.states.actions.Action`
union with ``match``; ``assert_never`` makes mypy prove every action is
handled. The actions on the job's Workflow go to the base class
(:mod:`pipeline.perform.workflow_hands`), those on rabbits' records to one method, the
rest are here. An action may end the list: a refusal by DWS (the refusal's
exception is sent), a Workflow found gone (the action's ``if_gone`` is
performed instead), or a duplicate hook that finds the Workflow moved on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, assert_never

from pipeline.clients.fabric import FabricManager
from pipeline.clients.k8s import DwsClient
from pipeline.errors import (
    PermanentError,
    VniError,
)
from pipeline.model.answers import Phase
from pipeline.model.hwcoll import redact
from pipeline.model.job import JobChanges, JobRecord
from pipeline.model.node_messages import clientmount_stop
from pipeline.model.told import Change, Told
from pipeline.perform import deadlines as timeouts
from pipeline.perform.fabric import release, reserve
from pipeline.perform.workflow_hands import Stop, WorkflowHands
from pipeline.states import rabbits as rabbit_rules
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    ConfirmDestroyed,
    CreateRecord,
    DisarmDeadline,
    ExpectAnswers,
    FinishJob,
    ForgetAnswers,
    FreeRabbits,
    HoldBadRabbit,
    HoldRabbits,
    MarkDone,
    MarkMounted,
    RabbitAction,
    RabbitDaemonDown,
    Release,
    ReleaseMulticast,
    ReleaseVnis,
    ReserveMulticast,
    ReserveVnis,
    RestoreVnis,
    SendNodeTask,
    SendOnce,
    SendTask,
    TellFlux,
    UpdateJob,
    WorkflowAction,
)
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


def _updater(changes: JobChanges) -> Callable[[JobRecord], JobRecord]:
    def change(record: JobRecord) -> JobRecord:
        return record.model_copy(update=dict(changes))

    return change


class _Performer(WorkflowHands):
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
        super().__init__(store, dws, jobid, workflow)
        self.fabric = fabric
        self.node_prologs = node_prologs
        self.send_node = send_node
        self.send_task = send_task
        self.retention_s = retention_s

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
        if isinstance(action, WorkflowAction):
            self.on_workflow(action)
            return
        if isinstance(action, RabbitAction):
            self._on_rabbits(action)
            return
        store = self.store
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
            case RestoreVnis(vnis, pool, reason, nodes):
                self._restore_vnis(list(vnis), pool, reason, list(nodes))
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

    def _on_rabbits(self, action: RabbitAction) -> None:
        """What Flux is told of rabbits: each a compare-and-set of the rabbit's record."""
        store, job = self.store, str(self.jobid)
        match action:
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

    def _restore_vnis(self, vnis: list[int], pool: str, reason: str, nodes: list[str]) -> None:
        """Hold the VNIs Flux says the job has again (the pool's restore is idempotent per
        job) and write them in its record; a record that holds a reservation is left."""
        record = self.store.jobs.get(self.jobid)
        if record is not None and record.slingshot is not None:
            return
        if vnis:
            self.store.vnipool.configure(pool)
            self.store.vnipool.restore(self.jobid, vnis)
        state = slingshot_outcome(vnis, reason, fatal=False, nodes=nodes)
        self.store.jobs.update(self.jobid, _updater({"slingshot": state}))

    def _send_nodes(self, sends: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        if not sends:
            return
        if self.send_node is None:
            node, task_name, _ = sends[0]
            raise PermanentError(f"job {self.jobid}: no way to send {task_name} to {node}")
        self.send_node([(node, name, {"hostname": node, **kwargs}) for node, name, kwargs in sends])


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
    except Stop as stop:
        return stop.done
    return True
