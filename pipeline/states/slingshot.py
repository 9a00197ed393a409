"""What the pipeline does for a job on the Slingshot network, decided from what its task read.

As flux-coral2's cray-slingshot plugins do it, with two differences: the job
is held until every node has its CXI services (not only until the VNIs are
reserved; the node prologs are :mod:`pipeline.states.nodes`), and released
VNIs wait in quarantine until every node has destroyed its services for them.

* At RUN: the reservation is recorded as it is made (:func:`outcome`), then the job's
  ``cray-slingshot`` event is posted (:func:`resume`); :func:`cxi_part` is what the
  node prologs make.
* At CLEANUP (:func:`on_cleanup`): release the VNIs into quarantine; the node
  epilogs destroy the services. A node whose services are gone confirms it
  (:func:`on_node_clean`); one whose services stay busy is tried again on
  housekeeping's beat for ``pipeline.cxi_busy_timeout`` (:class:`BusyPolicy`), then
  drained, and stays in the quarantine until ``coral2-pipeline slingshot clean``
  sweeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import NamedTuple

from pipeline.model import node_messages
from pipeline.model.answers import Phase
from pipeline.model.job import DeadlineKind, JobRecord, Slingshot
from pipeline.model.slingshot import reservation_event
from pipeline.states.actions import (
    Action,
    ArmDeadline,
    ConfirmDestroyed,
    FinishJob,
    ForgetAnswers,
    MarkDone,
    Release,
    ReleaseVnis,
    SendNodeTask,
    SendOnce,
    UpdateJob,
    exception,
)

HOLD = "cray-slingshot"


class BusyPolicy(NamedTuple):
    """How housekeeping treats a node whose CXI services stay busy after its job."""

    give_up_s: float = 300.0  # pipeline.cxi_busy_timeout: then the node is drained
    retry_s: float = 10.0  # pipeline.cxi_busy_retry: the epilog is sent again this often


BUSY = BusyPolicy()


def fail(jobid: int, note: str, hosts: Sequence[str] = ()) -> list[Action]:
    """The job's fatal ``cray-slingshot`` exception (severity 0), and the verdict its held
    prolog (on each of ``hosts``, per rank) waits for."""
    return [
        exception(jobid, "cray-slingshot", 0, note, "exception:cray-slingshot"),
        Release(1, note, tuple(hosts)),
    ]


def post_event(jobid: int, vnis: list[int], reason: str) -> SendOnce:
    """Post the job's ``cray-slingshot`` event: its VNIs, or why it has none."""
    payload = {"id": jobid, "name": HOLD, "context": reservation_event(vnis, reason)}
    return SendOnce("event-post", payload, f"event:{HOLD}")


def outcome(vnis: list[int], reason: str, *, fatal: bool, nodes: list[str]) -> Slingshot:
    """The reservation a :class:`~pipeline.states.actions.ReserveVnis` writes: ``vnis``
    (empty for ``reason``); ``fatal``: an empty reservation that fails the job
    (``vni-reserve-fatal`` and a failed reserve); ``nodes``: the nodes that get CXI
    services for it (none without ``cxi-enable``, none without VNIs). The job's event,
    or its failure, is then :func:`resume`'s."""
    if fatal:
        return Slingshot(reason=reason, failed=True)
    return Slingshot(vnis=vnis, reason=reason, nodes=nodes if vnis else [])


def resume(job: JobRecord, hosts: Sequence[str] = ()) -> list[Action]:
    """The job's reservation is recorded: post its event (once per mark), or fail the job
    (once), naming its nodes (``hosts`` until its node work is recorded) for their
    per-rank prologs."""
    state = job.slingshot
    if state is None or state.released:
        return []
    if state.failed:
        return fail(job.jobid, state.reason, job.node_work.nodes if job.node_work else hosts)
    return [post_event(job.jobid, state.vnis, state.reason)]


def cxi_part(job: JobRecord) -> dict[str, list[int]] | None:
    """What the job's node prologs do for its CXI services (None: nothing)."""
    state = job.slingshot
    if state is None or not state.nodes:
        return None
    return {"vnis": state.vnis}


def on_cleanup(job: JobRecord) -> list[Action]:
    """The job reached CLEANUP: its VNIs go to quarantine until its nodes' services are
    gone (their epilogs are sent with the rest of the node epilog)."""
    state = job.slingshot
    if state is None or state.released:
        return []
    released = state.model_copy(update={"released": True})
    return [ReleaseVnis(tuple(state.nodes)), MarkDone({"slingshot": released})]


def finished(job: JobRecord, state: Slingshot | None) -> list[Action]:
    """A job tracked for its nodes alone (no Workflow) is finished once its VNIs are
    released and every node's services are gone."""
    if job.workflow is not None:
        return []
    if state is not None and not (state.released and set(state.clean) >= set(state.nodes)):
        return []
    return [FinishJob()]


def epilogs(job: JobRecord, state: Slingshot, nodes: list[str]) -> list[Action]:
    """The CXI part of the node epilog of each of ``nodes`` (housekeeping's retries)."""
    name, kwargs = node_messages.epilog(job.jobid, job.userid, None, {"vnis": state.vnis})
    return [SendNodeTask(node, name, dict(kwargs)) for node in nodes]


def on_node_clean(
    job: JobRecord, node: str, busy: list[str], now: float, policy: BusyPolicy = BUSY
) -> list[Action]:
    """``node``'s epilog ran (or an admin swept it): its services are gone (``busy``
    empty), or some are still in use; those are retried by housekeeping every
    ``policy.retry_s``, and the node is drained after ``policy.give_up_s``."""
    state = job.slingshot
    if state is None:
        return []
    if node in state.clean:  # counted already; what followed may not have been done
        return finished(job, state)
    if not busy:
        clean = sorted({*state.clean, node})
        update = state.model_copy(update={"clean": clean})
        actions: list[Action] = [ConfirmDestroyed((node,)), MarkDone({"slingshot": update})]
        return actions + finished(job, update)
    since = state.busy_since.get(node, now)
    if now - since < policy.give_up_s:
        update = state.model_copy(update={"busy_since": {**state.busy_since, node: since}})
        return [
            UpdateJob({"slingshot": update}),
            ArmDeadline(DeadlineKind.CXI_RETRY, policy.retry_s, "retry"),
        ]
    if node in state.drained:
        return []
    reason = f"CXI services of VNIs {','.join(map(str, state.vnis))} busy: {'; '.join(busy)}"
    drain = {"targets": node, "mode": "update", "reason": reason}
    update = state.model_copy(update={"drained": sorted({*state.drained, node})})
    return [MarkDone({"slingshot": update}), SendOnce("drain", drain, f"drain:cxi:{node}")]


def on_clean(job: JobRecord, clean: AbstractSet[str]) -> list[Action]:
    """The nodes of ``clean`` answered their epilog with no CXI service left, or were
    swept (``pipeline.store.tally``'s ``clean`` set: counted without the job's lock, one
    answer a node): confirm those not yet confirmed, all in one step, and finish the job
    once every node of its reservation is clean."""
    state = job.slingshot
    if state is None:
        return []
    newly = sorted(set(clean) - set(state.clean))
    if not newly:
        return finished(job, state)
    update = state.model_copy(update={"clean": sorted({*state.clean, *newly})})
    actions: list[Action] = [ConfirmDestroyed(tuple(newly)), MarkDone({"slingshot": update})]
    if set(update.clean) >= set(state.nodes):  # the count has served: after the record
        actions.append(ForgetAnswers(Phase.CLEAN))
    return actions + finished(job, update)


def on_retry(job: JobRecord, clean: AbstractSet[str] = frozenset()) -> list[Action]:
    """Housekeeping's beat: send the CXI epilog again to the nodes not yet clean (``clean``:
    those counted clean since the record last said)."""
    state = job.slingshot
    if state is None:
        return []
    done = {*state.clean, *clean, *state.drained}
    return epilogs(job, state, [n for n in state.nodes if n not in done])
