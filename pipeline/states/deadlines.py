"""What each lifecycle deadline does when it fires (flux-coral2's timers and TC sweep).

``timeouts.fire`` runs a deadline only while its token is still in the job
record; its task (``pipeline.tasks.deadlines``) reads what the decision
needs — the Workflow, which rabbits are behind, which computes did not
mount — and performs what these functions return.

Node loss within ``dw_failure_tolerance`` is tolerated as flux-coral2 does
it: a ``dws-node-failure`` exception (severity 1) naming the lost nodes and
``forceReady`` on the Workflow; beyond it, the fatal exception of the timer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.model.hostlist import encode_hostlist
from pipeline.model.job import Epilog, JobRecord
from pipeline.settings import RabbitSettings
from pipeline.states.actions import (
    Action,
    ForceReady,
    HoldRabbits,
    MarkDone,
    RabbitDaemonDown,
    SendOnce,
    UpdateJob,
    exception,
)
from pipeline.states.health import badrabbit, drain_unmounted
from pipeline.states.hooks import tear_down

CLEAR_TC = UpdateJob({"tc_since": None, "tc_message": "", "tc_prerun": False})


def fatal(job: JobRecord, kind: str, severity: int, note: str) -> list[Action]:
    """The timer's own exception, once per kind."""
    return [exception(job.jobid, kind, severity, note, f"exception:{kind}")]


def lose_nodes(job: JobRecord, nodes: Sequence[str]) -> list[Action] | None:
    """flux-coral2's ``notify_of_node_failure``: count ``nodes`` as lost; the actions that
    go on without them, or None when the loss is beyond the job's tolerance (the record
    still counts them: see :func:`count_lost`). A loss of no node is no reason to go on:
    forcing readiness would only move the job to a state that fails the same way (nnf
    names no rabbit it is waiting for), so the caller's failure stands (None)."""
    failed = sorted(set(job.failed_nodes) | set(nodes))
    if not nodes or len(failed) > job.failure_tolerance:
        return None
    batch = encode_hostlist(sorted(set(nodes)))
    return [
        UpdateJob({"failed_nodes": failed}),
        exception(job.jobid, "dws-node-failure", 1, batch, f"exception:node-failure:{batch}"),
        ForceReady(),
    ]


def count_lost(job: JobRecord, nodes: Sequence[str]) -> UpdateJob:
    """Count ``nodes`` among the job's failed nodes."""
    return UpdateJob({"failed_nodes": sorted(set(job.failed_nodes) | set(nodes))})


def tolerate_or(job: JobRecord, nodes: Sequence[str], otherwise: list[Action]) -> list[Action]:
    """Go on without ``nodes`` if the job tolerates it, else ``otherwise``."""
    tolerated = lose_nodes(job, nodes)
    return tolerated if tolerated is not None else [count_lost(job, nodes), *otherwise]


def setup_timeout(job: JobRecord, lustre: bool, behind: Sequence[str]) -> list[Action]:
    """Setup outlasted ``rabbit.setup_timeout``; ``behind``: the job's computes whose
    rabbit's storage is not ready; ``lustre``: a Lustre file system is being made (no
    rabbit can be left out)."""
    timeout = fatal(job, "dws-timeout", 0, "File system creation took too long")
    if job.failure_tolerance <= 0 or lustre:
        return timeout
    return tolerate_or(job, behind, timeout)


def prerun_timeout(
    job: JobRecord,
    unmounted: Sequence[str],
    rabbit_of: Mapping[str, str],
    rabbits_down: Sequence[str] = (),
) -> list[Action]:
    """PreRun (the mounts) outlasted ``rabbit.prerun_timeout``; ``unmounted``: computes
    whose ClientMounts are not mounted (read only when the job tolerates a loss);
    ``rabbit_of``: their rabbits; ``rabbits_down``: rabbits whose own ClientMounts are
    not mounted (their node daemons down), handled as rabbits: their ssds go down."""
    down: list[Action] = (
        [RabbitDaemonDown(tuple(sorted(set(rabbits_down))))] if rabbits_down else []
    )
    timeout = fatal(job, "dws-timeout", 0, "timed out waiting for mounts")
    if job.failure_tolerance <= 0:
        return [*down, *timeout]
    return [*down, *badrabbit(unmounted, rabbit_of), *tolerate_or(job, unmounted, timeout)]


def postrun_timeout(
    job: JobRecord,
    workflow: dict[str, Any] | None,
    mounted: Sequence[str],
    settings: RabbitSettings,
    partial: bool = True,
) -> list[Action]:
    """Unmounting outlasted ``rabbit.postrun_timeout``: tear down skipping data movement,
    drain the computes still ``mounted``. With ``partial`` (``pipeline.partial_epilog``)
    the epilog succeeds for the rest at once, the job's rabbits held until Teardown
    completes; else the whole job waits for Teardown, as flux-coral2 does."""
    skipped = fatal(job, "rabbit-timeout", 0, "unmounts timed out, skipping data movement")
    actions = [*tear_down(job, workflow, settings), *skipped, *drain_unmounted(mounted)]
    if not partial or not job.epilog_held or workflow is None:  # gone: released already
        return actions
    return [*actions, *release_early(job)]


def release_early(job: JobRecord) -> list[Action]:
    """The epilog succeeds before Teardown completes (after the drains ahead of it in the
    outbox): the job's rabbits are held, their ssds down, until it does."""
    return [
        HoldRabbits(tuple(sorted(set(job.rabbits)))),
        SendOnce("epilog-remove", {"id": job.jobid}, "epilog-remove"),
        MarkDone({"epilog": Epilog.EARLY}),
    ]


def teardown_after(
    job: JobRecord, workflow: dict[str, Any] | None, settings: RabbitSettings
) -> list[Action]:
    """``rabbit.teardown_after`` passed since the job ran: tear down, skipping data
    movement."""
    return [
        *tear_down(job, workflow, settings),
        *fatal(job, "teardown-timeout", 1, "skipping rabbit data movement"),
    ]


def tc_timeout(
    job: JobRecord, unmounted: Sequence[str], rabbit_of: Mapping[str, str]
) -> list[Action]:
    """A TransientCondition outlasted ``rabbit.tc_timeout``. In PreRun the computes whose
    mounts are not up (``unmounted``; their rabbits: ``rabbit_of``) may be lost within the
    tolerance; else the job fails."""
    if job.tc_since is None:
        return []
    note = (
        "DWS/Rabbit interactions failed: workflow in 'TransientCondition' state too long: "
        f"{job.tc_message}"
    )
    failed: list[Action] = [exception(job.jobid, "exception", 0, note, "exception:tc"), CLEAR_TC]
    if not job.tc_prerun:
        return failed
    tolerated = lose_nodes(job, unmounted)
    if tolerated is not None:
        return [*badrabbit(unmounted, rabbit_of), *tolerated, CLEAR_TC]
    return [*badrabbit(unmounted, rabbit_of), count_lost(job, unmounted), *failed]
