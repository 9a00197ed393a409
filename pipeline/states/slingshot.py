"""What the pipeline does for a job on the Slingshot network, decided from what its task read.

As flux-coral2's cray-slingshot plugins do it, with two differences: the job
is held until every node has its CXI services (not only until the VNIs are
reserved), and released VNIs wait in quarantine until every node has
destroyed its services for them.

* At RUN (:func:`on_reserved`): record the reservation, post the job's
  ``cray-slingshot`` event, send each node its CXI prolog; a job without VNIs,
  or a site without CXI services (``cxi-enable`` false), is released at once.
* As nodes answer (:func:`on_node_ready`, :func:`on_node_failed`): the job is
  released when the last node's services are up; a node that cannot give
  them fails the job with a ``cray-slingshot`` exception.
* At CLEANUP (:func:`on_cleanup`): release the VNIs into quarantine, send each
  node its CXI epilog; a node whose services are gone confirms it
  (:func:`on_node_clean`); one whose services stay busy is tried again on
  housekeeping's beat for ``BUSY_GIVE_UP_S``, then drained, and stays in the
  quarantine until ``coral2-pipeline slingshot clean`` sweeps it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.model.job import JobRecord, Slingshot
from pipeline.model.slingshot import reservation_event
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    ConfirmDestroyed,
    FinishJob,
    ReleaseVnis,
    SendNodeTask,
    SendOnce,
    UpdateJob,
    exception,
)

HOLD = "cray-slingshot"
#: How long housekeeping retries the destroy of a node's busy services before draining it.
BUSY_GIVE_UP_S = 300.0
#: How often housekeeping retries it.
BUSY_RETRY_S = 10.0


def fail(jobid: int, note: str) -> list[Action]:
    """The job's fatal ``cray-slingshot`` exception (severity 0)."""
    return [exception(jobid, "cray-slingshot", 0, note, "exception:cray-slingshot")]


def post_event(jobid: int, vnis: list[int], reason: str) -> SendOnce:
    """Post the job's ``cray-slingshot`` event: its VNIs, or why it has none."""
    payload = {"id": jobid, "name": HOLD, "context": reservation_event(vnis, reason)}
    return SendOnce("event-post", payload, f"event:{HOLD}")


def release_hold(jobid: int) -> SendOnce:
    """Let the job start: finish its ``cray-slingshot`` prolog."""
    return SendOnce("prolog-finish", {"id": jobid, "name": HOLD, "status": 0}, f"prolog:{HOLD}")


def on_reserved(
    job: JobRecord,
    vnis: list[int],
    reason: str,
    *,
    fatal: bool,
    cores: Mapping[str, int],
    cxi_enable: bool,
) -> list[Action]:
    """The reservation is made (``vnis``), or is empty for ``reason``; ``fatal``: an empty
    reservation that fails the job (``vni-reserve-fatal`` and a failed reserve);
    ``cores``: the job's nodes and their cores in R."""
    if fatal:
        failed = Slingshot(reason=reason, failed=True)
        return [UpdateJob({"slingshot": failed}), *fail(job.jobid, reason)]
    nodes = sorted(cores) if vnis and cxi_enable else []
    actions: list[Action] = [
        UpdateJob({"slingshot": Slingshot(vnis=vnis, reason=reason, nodes=nodes)}),
        post_event(job.jobid, vnis, reason),
    ]
    if not nodes:
        return [*actions, release_hold(job.jobid)]
    return [*actions, *prologs(job, vnis, nodes, cores)]


def resume(job: JobRecord, cores: Mapping[str, int]) -> list[Action]:
    """A duplicate RUN of a job whose reservation is recorded: send again what may not have
    gone out (each message once per mark; a node prolog finds its services made)."""
    state = job.slingshot
    if state is None or state.released:
        return []
    if state.failed:
        return fail(job.jobid, state.reason)
    actions: list[Action] = [post_event(job.jobid, state.vnis, state.reason)]
    waiting = [n for n in state.nodes if n not in state.ready]
    if not state.nodes or not waiting:
        return [*actions, release_hold(job.jobid)]
    return [*actions, *prologs(job, state.vnis, waiting, cores)]


def prologs(
    job: JobRecord, vnis: list[int], nodes: list[str], cores: Mapping[str, int]
) -> list[Action]:
    """The CXI prolog of each of ``nodes``."""
    return [
        SendNodeTask(
            node,
            "node.cxi_prolog",
            {"jobid": job.jobid, "userid": job.userid, "vnis": vnis, "ncores": cores.get(node, 0)},
        )
        for node in nodes
    ]


def on_node_ready(job: JobRecord, node: str) -> list[Action]:
    """``node``'s services are up; the last one releases the job."""
    state = job.slingshot
    if state is None or node not in state.nodes or node in state.ready:
        return []
    ready = sorted({*state.ready, node})
    actions: list[Action] = [UpdateJob({"slingshot": state.model_copy(update={"ready": ready})})]
    if set(ready) >= set(state.nodes):
        actions.append(release_hold(job.jobid))
    return actions


def on_node_failed(job: JobRecord, node: str, error: str) -> list[Action]:
    """``node`` could not give the job its services."""
    return fail(job.jobid, f"{node}: {error}")


def on_cleanup(job: JobRecord) -> list[Action]:
    """The job reached CLEANUP: its VNIs go to quarantine until its nodes' services are
    gone; each node is sent its CXI epilog."""
    state = job.slingshot
    if state is None or state.released:
        return []
    released = state.model_copy(update={"released": True})
    actions: list[Action] = [ReleaseVnis(tuple(state.nodes)), UpdateJob({"slingshot": released})]
    return [*actions, *epilogs(job, state, state.nodes), *finished(job, released)]


def finished(job: JobRecord, state: Slingshot) -> list[Action]:
    """A job tracked for its VNIs alone (no Workflow) is finished once every node is clean."""
    if job.workflow is None and state.released and set(state.clean) >= set(state.nodes):
        return [FinishJob()]
    return []


def epilogs(job: JobRecord, state: Slingshot, nodes: list[str]) -> list[Action]:
    """The CXI epilog of each of ``nodes``."""
    kwargs = {"jobid": job.jobid, "userid": job.userid, "vnis": state.vnis}
    return [SendNodeTask(node, "node.cxi_epilog", kwargs) for node in nodes]


def on_node_clean(job: JobRecord, node: str, busy: list[str], now: float) -> list[Action]:
    """``node``'s epilog ran: its services are gone (``busy`` empty), or some are still
    in use; those are retried by housekeeping, and the node is drained after
    ``BUSY_GIVE_UP_S``."""
    state = job.slingshot
    if state is None or node in state.clean:
        return []
    if not busy:
        clean = sorted({*state.clean, node})
        update = state.model_copy(update={"clean": clean})
        actions: list[Action] = [ConfirmDestroyed(node), UpdateJob({"slingshot": update})]
        return actions + finished(job, update)
    since = state.busy_since.get(node, now)
    if now - since < BUSY_GIVE_UP_S:
        update = state.model_copy(update={"busy_since": {**state.busy_since, node: since}})
        return [UpdateJob({"slingshot": update}), ArmDeadline("cxi_retry", now + BUSY_RETRY_S)]
    if node in state.drained:
        return []
    reason = f"CXI services of VNIs {','.join(map(str, state.vnis))} busy: {'; '.join(busy)}"
    drain = {"targets": node, "mode": "update", "reason": reason}
    update = state.model_copy(update={"drained": sorted({*state.drained, node})})
    return [UpdateJob({"slingshot": update}), SendOnce("drain", drain, f"drain:cxi:{node}")]


def on_retry(job: JobRecord) -> list[Action]:
    """Housekeeping's beat: send the CXI epilog again to the nodes not yet clean."""
    state = job.slingshot
    if state is None:
        return []
    waiting = [n for n in state.nodes if n not in state.clean and n not in state.drained]
    return epilogs(job, state, waiting)
