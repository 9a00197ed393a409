"""The actions a decision may return; ``pipeline.tasks.act.perform`` carries them out.

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

from pipeline.model.job import JobChanges, JobRecord


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

    phase: str


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
class HoldBadRabbit:
    """Note in ``rabbit``'s record of what Flux was told (:mod:`pipeline.store.told`) that
    ``computes`` were given ``badrabbit``, so that its next Storage change decides them."""

    rabbit: str
    computes: tuple[str, ...]


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

    kind: str
    after_s: float
    token: str | None = None


@dataclass(frozen=True)
class DisarmDeadline:
    """Disarm deadline ``kind``."""

    kind: str


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
    phase: str = "prolog"


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


Action = (
    CreateRecord
    | UpdateJob
    | MarkDone
    | FinishJob
    | ForgetAnswers
    | CreateWorkflow
    | PatchDesiredState
    | PatchServers
    | PatchComputes
    | ForceReady
    | RemoveFinalizer
    | DeleteWorkflow
    | DisableComputes
    | DisableRabbit
    | HoldBadRabbit
    | HoldRabbits
    | FreeRabbits
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
