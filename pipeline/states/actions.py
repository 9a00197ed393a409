"""The actions a decision may return; ``pipeline.perform.performer.perform`` carries them out.

:data:`Action` is a closed union: ``perform`` dispatches it with ``match``
and ``assert_never``, so mypy proves every action is handled. Each action
is idempotent on its own: desiredState patches are guarded by the expected
current state, messages to Flux are sent once per job and ``mark``,
creates count 409 as done and deletes 404 as done.

The record changes that say work is done (:class:`MarkDone`, :class:`FinishJob`)
are performed after every other action of their list, whatever their place
in it: a mark follows the work it stands for.

An action that can find the Workflow gone carries what to do then
(``if_gone``); performing those ends the list, since what followed was
decided for a Workflow that exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.model.answers import Phase
from pipeline.model.job import DeadlineKind, JobChanges, JobRecord
from pipeline.model.told import Change, Told


@dataclass(frozen=True)
class CreateRecord:
    """Create the job's record unless it exists."""

    record: JobRecord


@dataclass(frozen=True)
class UpdateJob:
    """Set fields of the job record that hold facts (a reservation made, a condition
    seen, the nodes the work goes to): performed where it stands in its list. The
    fields are :class:`~pipeline.model.job.JobChanges`' (mypy checks them)."""

    changes: JobChanges = field(default_factory=JobChanges)


@dataclass(frozen=True)
class MarkDone:
    """Set fields of the job record that say work is done (``released``, ``mounted``, a
    teardown asked): ``perform`` applies it after every other action of its list, so a
    task killed before it finds the work undone and does it again."""

    changes: JobChanges = field(default_factory=JobChanges)


@dataclass(frozen=True)
class FinishJob:
    """Stop tracking the job; its record is kept for ``pipeline.retention``, then dropped."""


@dataclass(frozen=True)
class ForgetAnswers:
    """The job's ``phase`` answers (``pipeline.store.tally``) have served: drop them. A mark,
    performed after the work and the record that took them in."""

    phase: Phase


@dataclass(frozen=True)
class CreateWorkflow:
    """Create the Workflow ``body`` (409 is done); refused by DWS, the job gets the
    ``refused_as`` exception with DWS's message and the rest is not done."""

    body: dict[str, Any]
    refused_as: str


@dataclass(frozen=True)
class PatchDesiredState:
    """Move ``spec.desiredState`` from ``expected`` to ``desired``.

    ``expected=None``: from whatever state the Workflow is in (Teardown).
    A Workflow found elsewhere: ``if_moved_on`` says whether the rest is
    still done (an observe's other actions) or not (a duplicate hook). A
    Workflow found gone: ``if_gone`` is done instead of the rest (None:
    the error is raised).
    """

    expected: str | None
    desired: str
    if_moved_on: Literal["continue", "stop"] = "continue"
    if_gone: tuple[Action, ...] | None = None


@dataclass(frozen=True)
class PatchServers:
    """Fill the Servers object ``name`` with ``allocation_sets``; ``if_gone`` when its
    Workflow is gone."""

    name: str
    namespace: str | None
    allocation_sets: list[dict[str, Any]]
    if_gone: tuple[Action, ...] = ()


@dataclass(frozen=True)
class PatchComputes:
    """Fill the Workflow's Computes with ``hosts``."""

    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ForceReady:
    """Set ``spec.forceReady`` on the Workflow: DWS goes on without the lost nodes."""


@dataclass(frozen=True)
class RemoveFinalizer:
    """Remove Flux's finalizer from the Workflow (404 is done)."""


@dataclass(frozen=True)
class DeleteWorkflow:
    """Remove Flux's finalizer and delete the Workflow (404 is done)."""


@dataclass(frozen=True)
class DisableComputes:
    """Mark ``nodes`` Disabled in DWS's SystemStatus."""

    nodes: tuple[str, ...]


@dataclass(frozen=True)
class DisableRabbit:
    """Disable rabbit ``name``'s Storage, saying why and since when (404 is done)."""

    name: str
    reason: str
    date: str


@dataclass(frozen=True)
class TellFlux:
    """Send Flux ``change``'s messages about ``rabbit`` and keep its record, in one step,
    if the record is still ``before`` (the one decided on); else the task runs again
    (:class:`~pipeline.errors.StoreConflict`) and decides on the new one."""

    rabbit: str
    before: Told
    change: Change


@dataclass(frozen=True)
class HoldBadRabbit:
    """Note in ``rabbit``'s record of what Flux was told (:mod:`pipeline.store.told`) that
    ``computes`` were given ``badrabbit``, so that its next Storage change decides them."""

    rabbit: str
    computes: tuple[str, ...]


@dataclass(frozen=True)
class RabbitDaemonDown:
    """``rabbits``' own ClientMounts never came up (their node daemons down): their ssds go
    down in Flux until each one's Storage next changes
    (:func:`pipeline.states.rabbits.daemon_down`)."""

    rabbits: tuple[str, ...]


@dataclass(frozen=True)
class HoldRabbits:
    """The job holds ``rabbits`` until its Teardown completes: their ssds go down in Flux
    (:func:`pipeline.states.rabbits.hold`)."""

    rabbits: tuple[str, ...]


@dataclass(frozen=True)
class FreeRabbits:
    """The job's hold on ``rabbits`` is over (:func:`pipeline.states.rabbits.free`)."""

    rabbits: tuple[str, ...]


@dataclass(frozen=True)
class SendOnce:
    """Append one outbox message for the job, at most once per ``mark``."""

    kind: str
    payload: dict[str, Any]
    mark: str


@dataclass(frozen=True)
class ArmDeadline:
    """Arm deadline ``kind`` to fall due ``after_s`` seconds after it is armed (the clock
    is read as it is armed: :mod:`pipeline.store.clock`); ``token`` names this arming
    (default: the kind and due time)."""

    kind: DeadlineKind
    after_s: float
    token: str | None = None


@dataclass(frozen=True)
class DisarmDeadline:
    """Disarm deadline ``kind``."""

    kind: DeadlineKind


@dataclass(frozen=True)
class SendNodeTask:
    """Send node task ``name`` with ``kwargs`` to ``node``'s queue (``node.<hostname>``)."""

    node: str
    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class ReleaseVnis:
    """Give the job's VNIs back to the pool, in quarantine until each of ``nodes``
    confirms its CXI services for them are gone ("unknown job" counts as done)."""

    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfirmDestroyed:
    """``nodes`` have no CXI service left for the job's VNIs."""

    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Release:
    """Write the verdict the job's job-manager prolog waits for: ``status`` 0 lets the job
    start; otherwise ``note`` says why it may not (the first verdict stands). ``hosts``:
    the job's nodes, for their per-rank prologs (``pipeline.node_prologs``)."""

    status: int = 0
    note: str = ""
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExpectAnswers:
    """The job's node work waits for ``count`` nodes in ``phase`` (``pipeline.store.tally``):
    the prolog's, or the epilog's ``clean``."""

    count: int
    phase: Phase = Phase.PROLOG


@dataclass(frozen=True)
class RestoreVnis:
    """Hold ``vnis`` for the job again in the pool ``pool`` (Flux's ``cray-slingshot``
    event says the job has them; the store lost its reservation), and write the
    reservation into its record as :class:`ReserveVnis` would have, ``nodes`` getting CXI
    services for it. A record that holds a reservation already is left as it is."""

    vnis: tuple[int, ...]
    pool: str
    reason: str = ""
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReserveVnis:
    """Reserve ``count`` VNIs for the job from the pool ``pool`` (flux-coral2's
    ``vni-pool``), and write the outcome into its record as part of this action: the
    reservation, with ``reason`` (why it is empty) and the ``nodes`` that get CXI
    services for it; or, the pool refusing, an empty reservation whose reason is the
    pool's error, failed when ``fatal`` (``vni-reserve-fatal``). A record that holds a
    reservation already is left as it is (a re-run)."""

    count: int
    pool: str
    reason: str = ""
    nodes: tuple[str, ...] = ()
    fatal: bool = True


@dataclass(frozen=True)
class ReserveMulticast:
    """Reserve ``limit`` multicast addresses at the fabric manager as ``fm_job_id`` for job
    step ``step``, and write the outcome into the record as part of this action: the
    reservation (``hwcoll``), or why the job runs without hardware collectives
    (``hwcoll_off``; a fabric manager that does not answer counts as down for a while).
    A record that holds a reservation already is left as it is."""

    fm_job_id: str
    limit: int
    step: str


@dataclass(frozen=True)
class ReleaseMulticast:
    """Delete reservation ``fm_job_id`` at the fabric manager, its job step ``step``'s
    multicast trees first (None: none to delete); a 404 is done. A fabric manager that
    does not answer fails the action (the task is retried)."""

    fm_job_id: str
    step: str | None = None


@dataclass(frozen=True)
class SendTask:
    """Send pipeline task ``name`` with ``kwargs`` (noted in the ledger first, so a message
    the broker loses is sent again; the task is idempotent, so a copy a re-run sends
    changes nothing)."""

    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class MarkMounted:
    """The job's file systems are mounted: note it for the nodes still to answer, and tell
    every node that has answered its prolog to stop the clientmount service."""


#: The actions on the job's Workflow and on what DWS is told of drains
#: (:class:`~pipeline.perform.workflow_hands.WorkflowHands`).
WorkflowAction = (
    CreateWorkflow
    | PatchDesiredState
    | PatchServers
    | PatchComputes
    | ForceReady
    | RemoveFinalizer
    | DeleteWorkflow
    | DisableComputes
    | DisableRabbit
)
#: The actions on what Flux was told of rabbits (each a compare-and-set of a rabbit's record).
RabbitAction = TellFlux | HoldBadRabbit | HoldRabbits | RabbitDaemonDown | FreeRabbits

Action = (
    CreateRecord
    | UpdateJob
    | MarkDone
    | FinishJob
    | ForgetAnswers
    | WorkflowAction
    | RabbitAction
    | SendOnce
    | ArmDeadline
    | DisarmDeadline
    | SendNodeTask
    | ReleaseVnis
    | ConfirmDestroyed
    | Release
    | ExpectAnswers
    | MarkMounted
    | SendTask
    | ReserveVnis
    | RestoreVnis
    | ReserveMulticast
    | ReleaseMulticast
)


def kvs_put(jobid: int, key: str, value: Any) -> SendOnce:
    """Put ``key`` in the job's KVS (once per key)."""
    return SendOnce("kvs-put", {"id": jobid, "key": key, "value": value}, f"kvs:{key}")


def exception(jobid: int, type_: str, severity: int, note: str, mark: str) -> SendOnce:
    """Raise a job exception (once per ``mark``)."""
    return SendOnce(
        "exception", {"id": jobid, "type": type_, "severity": severity, "note": note}, mark
    )


def timing(jobid: int, state: str, workflow: dict[str, Any]) -> list[Action]:
    """Save ``rabbit_<state>_timing`` from ``status.elapsedTimeLastState`` when present."""
    elapsed = (workflow.get("status") or {}).get("elapsedTimeLastState")
    if elapsed is None:
        return []
    return [kvs_put(jobid, f"rabbit_{state.lower()}_timing", elapsed)]
