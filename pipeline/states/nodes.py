"""The job's work on its compute nodes, decided from what its task read.

flux-coral2 does this work in scripts Flux runs on every node (the clientmount
prolog and epilog, ``flux slingshot prolog|epilog``), and its clientmount
prolog polls for the ``dws_environment`` event. Here the pipeline tells each
node what to do, through the node's own queue, when it is time:

* At RUN (:func:`plan`): one ``node.prolog`` per node — its CXI services, and
  the clientmount service started for a ``#DW`` job or stopped for another —
  while Flux holds the job in the job-manager prolog. A job with nothing to
  do on its nodes is released at once.
* As nodes answer: their answers are counted in the store without the job's
  lock (``pipeline.store.tally``), and the answer that completes a phase
  brings the locked decision (:func:`on_answers`); a node that failed fails
  the job with an exception naming it (:func:`on_prolog_failed`). For a
  ``#DW`` job, once its PreRun is complete (:func:`on_mounted`, decided where
  ``prolog-remove`` is sent) each node is told to stop the clientmount
  service again (``node.clientmount``), as flux-coral2's prolog does after
  ``dws_environment``.
* The job is released (:class:`~pipeline.states.actions.Release`) when no node
  is left to wait for; nodes that do not answer within ``node-timeout``
  seconds fail the job with an exception naming them (:func:`on_timeout`).
* At CLEANUP (:func:`epilogs`): one ``node.epilog`` per node — the CXI
  services destroyed, the clientmount service started for a ``#DW`` job so
  its file systems can be unmounted. Nothing in Flux waits for them; a node
  that is down runs its epilog when it comes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from pipeline.model import node_messages
from pipeline.model.answers import Phase
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.job import DeadlineKind, JobRecord, NodeWork
from pipeline.model.node_messages import Clientmount
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    DisarmDeadline,
    ExpectAnswers,
    MarkDone,
    MarkMounted,
    Release,
    SendNodeTask,
    UpdateJob,
    exception,
)

#: The exception a node's failed or missing prolog raises (CXI failures raise
#: ``cray-slingshot``, as flux-coral2 does).
PROLOG_EXCEPTION = "node-prolog"
#: The deadline on the nodes' answers.
DEADLINE = DeadlineKind.NODE_PROLOG
#: The deadline on a ``#DW`` job's file systems (flux-coral2: "dws_environment timeout").
MOUNT_DEADLINE = DeadlineKind.DWS_ENVIRONMENT


def fail(job: JobRecord, work: NodeWork, type_: str, note: str) -> list[Action]:
    """Fail the job: a fatal exception, and the verdict its held prolog waits for."""
    failed = work.model_copy(update={"failed": note})
    return [
        MarkDone({"node_work": failed}),
        exception(job.jobid, type_, 0, note, f"exception:{type_}"),
        DisarmDeadline(DEADLINE),
        DisarmDeadline(MOUNT_DEADLINE),
        Release(1, note, tuple(work.nodes)),
    ]


def plan(
    job: JobRecord,
    *,
    cores: Mapping[str, int],
    dw: bool,
    cxi: dict[str, Any] | None,
    clientmount: bool,
    mounted: bool,
    now: float,
    timeout_s: float,
    mount_timeout_s: float = 0.0,
    ready: AbstractSet[str] = frozenset(),
    stopped: AbstractSet[str] = frozenset(),
) -> list[Action]:
    """The node prologs of a job that reached RUN. ``cores``: its nodes and their cores;
    ``cxi``: the CXI part (``{"vnis": [...]}``), None when no services are made;
    ``clientmount``: the site runs the clientmount service on its nodes; ``mounted``:
    the job's PreRun is already complete; ``timeout_s``: how long the nodes have to
    answer; ``mount_timeout_s``: how long a ``#DW`` job waits for its file systems
    (``rabbit.prolog_timeout``, 0: for ever); ``ready``/``stopped``: the nodes that
    answered so far (a duplicate RUN)."""
    if job.node_work is not None:
        return resume(job, job.node_work, cores, cxi, clientmount, ready, stopped)
    if not cores or (cxi is None and not clientmount):
        return [Release(hosts=tuple(sorted(cores)))]
    work = NodeWork(
        nodes=sorted(cores), dw=dw and clientmount, since=now, timeout_s=timeout_s, mounted=mounted
    )
    job = job.model_copy(update={"node_work": work})
    # what a duplicate RUN cannot redo comes before the record of the work (its commit
    # point: a RUN that finds it resumes, :func:`resume`); the sends, which it can, after
    actions: list[Action] = [
        ExpectAnswers(len(work.nodes)),
        ArmDeadline(DEADLINE, timeout_s, "run"),
    ]
    if work.dw and mounted:
        actions.append(MarkMounted())
    if work.dw and not mounted and mount_timeout_s > 0:
        actions.append(ArmDeadline(MOUNT_DEADLINE, mount_timeout_s, "run"))
    actions.append(UpdateJob({"node_work": work}))
    return actions + prologs(job, work.nodes, cores, cxi, clientmount)


def prologs(
    job: JobRecord,
    nodes: list[str],
    cores: Mapping[str, int],
    cxi: dict[str, Any] | None,
    clientmount: bool,
) -> list[Action]:
    """The ``node.prolog`` of each of ``nodes``."""
    work = job.node_work
    action = None
    if clientmount and work is not None:
        action = Clientmount.START if work.dw else Clientmount.STOP
    actions: list[Action] = []
    for node in nodes:
        part = None if cxi is None else {**cxi, "ncores": cores.get(node, 0)}
        name, kwargs = node_messages.prolog(job.jobid, job.userid, action, part)
        actions.append(SendNodeTask(node, name, kwargs))
    return actions


def resume(
    job: JobRecord,
    work: NodeWork,
    cores: Mapping[str, int],
    cxi: dict[str, Any] | None,
    clientmount: bool,
    ready: AbstractSet[str],
    stopped: AbstractSet[str],
) -> list[Action]:
    """A duplicate RUN: send again what may not have gone out (every node task is
    idempotent; the first verdict stands)."""
    if work.failed:
        return [Release(1, work.failed, tuple(work.nodes))]
    if work.released:
        return [Release(hosts=tuple(work.nodes))]
    waiting = [n for n in work.nodes if n not in ready]
    actions = prologs(job, waiting, cores, cxi, clientmount)
    if work.dw and work.mounted:
        actions += stops(job, [n for n in work.nodes if n in ready and n not in stopped])
    return actions + release(job, work, ready, stopped)


def stops(job: JobRecord, nodes: list[str]) -> list[Action]:
    """Tell ``nodes`` to stop the clientmount service: the job's file systems are mounted."""
    name, kwargs = node_messages.clientmount_stop(job.jobid)
    return [SendNodeTask(node, name, kwargs) for node in nodes]


def release(
    job: JobRecord, work: NodeWork, ready: AbstractSet[str], stopped: AbstractSet[str]
) -> list[Action]:
    """Let the job start once no node is left to wait for."""
    if work.released or work.failed or (work.dw and not work.mounted):
        return []
    if work.waiting(set(ready), set(stopped)):
        return []
    done = work.model_copy(update={"released": True})
    return [
        MarkDone({"node_work": done}),
        DisarmDeadline(DEADLINE),
        DisarmDeadline(MOUNT_DEADLINE),
        Release(hosts=tuple(work.nodes)),
    ]


def on_prolog_failed(
    job: JobRecord, node: str, error: str, error_type: str = PROLOG_EXCEPTION
) -> list[Action]:
    """``node``'s prolog could not do its part: fail the job, naming the node."""
    work = job.node_work
    if work is None or node not in work.nodes or work.failed or work.released:
        return []
    return fail(job, work, error_type, f"{node}: {error}")


def on_answers(job: JobRecord, ready: AbstractSet[str], stopped: AbstractSet[str]) -> list[Action]:
    """Every node answered a phase (its prolog, or its clientmount stop): release the job
    if nothing else is missing."""
    work = job.node_work
    if work is None:
        return []
    return release(job, work, ready, stopped)


def on_mounted(job: JobRecord) -> list[Action]:
    """The job's PreRun is complete: the nodes that started clientmount stop it again
    (:class:`~pipeline.states.actions.MarkMounted` tells those that answered; those
    still to answer are told when they do), and have the node timeout again to do it."""
    work = job.node_work
    if work is None or not work.dw or work.mounted or work.failed:
        return []
    work = work.model_copy(update={"mounted": True})
    return [
        MarkDone({"node_work": work}),
        DisarmDeadline(MOUNT_DEADLINE),
        DisarmDeadline(DEADLINE),  # the first arming leaves the set only when disarmed
        ArmDeadline(DEADLINE, work.timeout_s, "mounted"),
        MarkMounted(),
    ]


def on_timeout(job: JobRecord, ready: AbstractSet[str], stopped: AbstractSet[str]) -> list[Action]:
    """The nodes did not all answer in time: fail the job, naming them."""
    work = job.node_work
    if work is None or work.released or work.failed:
        return []
    late = work.waiting(set(ready), set(stopped))
    if not late:  # a #DW job whose PreRun is not complete: the mount deadline owns that
        return []
    note = f"no answer from the node worker of {unique_hostlist(late)} in {work.timeout_s:g} s"
    return fail(job, work, PROLOG_EXCEPTION, note)


def on_mount_timeout(job: JobRecord) -> list[Action]:
    """A ``#DW`` job's file systems were not mounted in ``rabbit.prolog_timeout``: the
    exception flux-coral2's clientmount prolog raises."""
    work = job.node_work
    if work is None or work.mounted or work.released or work.failed:
        return []
    return fail(job, work, "prolog-timeout", "dws_environment timeout")


def epilogs(job: JobRecord, vnis: list[int] | None, clientmount: bool) -> list[Action]:
    """The ``node.epilog`` of each node the job's prolog was sent to (``vnis``: destroy
    the job's CXI services; ``clientmount``: start the service for a ``#DW`` job). The
    prolog's deadlines go: a job in CLEANUP waits on no prolog (one killed by a fatal
    exception never answers).

    A job whose CLEANUP came after its VNIs were reserved but before its node work was
    recorded (its RUN retried, or died in between) still gets the CXI epilog on every
    node of its reservation: its VNIs wait in quarantine on those nodes, and a prolog
    may have reached them. A ``#DW`` job in that case gets the clientmount service started
    on each of its computes all the same, as flux-coral2's epilog does on every node of
    the job: its PreRun may have made ClientMounts there, which Teardown waits to see
    unmounted."""
    work = job.node_work
    state = job.slingshot
    unplanned_dw = clientmount and work is None and job.workflow is not None
    if work is not None:
        nodes = list(work.nodes)
    else:
        reserved = list(state.nodes) if state and vnis else []
        nodes = sorted({*reserved, *(job.hosts if unplanned_dw else [])})
    if not nodes:
        return []
    over: list[Action] = [DisarmDeadline(DEADLINE), DisarmDeadline(MOUNT_DEADLINE)]
    dw = work.dw if work is not None else unplanned_dw
    start = Clientmount.START if clientmount and dw else None
    part = None if vnis is None else {"vnis": vnis}
    if start is None and part is None:
        return over
    name, kwargs = node_messages.epilog(job.jobid, job.userid, start, part)
    # the answers are counted without the job's lock; the count comes first, so that the
    # last answer, however fast, finds it
    expect = ExpectAnswers(len(nodes), Phase.CLEAN)
    return [*over, expect, *(SendNodeTask(node, name, dict(kwargs)) for node in nodes)]
