"""A job reaches RUN: what ``job.run`` reserves, and what ``job.prologs`` then sends.

The reservations come first, each an action that writes its outcome into the job's
record (:class:`~pipeline.states.actions.ReserveVnis`,
:class:`~pipeline.states.actions.ReserveMulticast`); the plan of the job's node work
needs their outcome, so ``job.run`` ends by sending ``job.prologs``, which decides on
the record as the reservations left it (:func:`on_prologs`): the job's
``cray-slingshot`` event, its ``hwcoll`` event and environment, then its node prologs
(:func:`pipeline.states.nodes.plan`). Each is one gather, one decision, one perform;
a copy of either (a retry, a redelivery) redoes nothing the record shows done.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from pipeline.model.answers import Phase
from pipeline.model.hwcoll import environment
from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states import hwcoll, nodes, slingshot
from pipeline.states.actions import (
    Action,
    CreateRecord,
    ForgetAnswers,
    MarkDone,
    ReserveMulticast,
    ReserveVnis,
    RestoreVnis,
    SendTask,
    UpdateJob,
)

#: The task that plans and sends a job's node work once its reservations are made.
PROLOGS = "job.prologs"


@dataclass(frozen=True)
class VniAsk:
    """What the job asks of the VNI pool: ``count`` VNIs from ``pool`` (``reason``: why
    none), or ``error``: its ``cray-slingshot`` option cannot be read."""

    count: int
    pool: str
    reason: str = ""
    error: str = ""
    fatal: bool = True  # cray_slingshot.vni_reserve_fatal


@dataclass(frozen=True)
class MulticastAsk:
    """The job's multicast reservation: ``reserve`` one as ``fm_job_id`` of ``limit``
    addresses, or ``off``: why it runs without (the fabric manager is down, the limit
    cannot be worked out)."""

    fm_job_id: str = ""
    limit: int = 0
    off: str = ""


def on_run(
    job: JobRecord,
    *,
    hosts: list[str],
    cxi_enable: bool,
    vnis: VniAsk,
    multicast: MulticastAsk | None,
    prologs: dict[str, Any],
) -> list[Action]:
    """``job`` reached RUN on ``hosts``: reserve what it needs, then send ``job.prologs``
    with ``prologs`` (its arguments). ``multicast``: None when the job is not eligible
    (or the site has no fabric manager) or holds its reservation already."""
    actions: list[Action] = []
    if job.slingshot is None:
        # the job's node work starts: no answer counted before it (a node cannot answer
        # for a job ahead of its run) stands
        actions += [CreateRecord(job), ForgetAnswers(Phase.PROLOG), ForgetAnswers(Phase.CLEAN)]
        if vnis.error:
            failed = Slingshot(reason=vnis.error, failed=True)
            fail = slingshot.fail(job.jobid, vnis.error, hosts)
            return [*actions, MarkDone({"slingshot": failed}), *fail]
        nodes_ = tuple(hosts) if cxi_enable else ()
        actions.append(ReserveVnis(vnis.count, vnis.pool, vnis.reason, nodes_, vnis.fatal))
    elif job.slingshot.failed:
        return slingshot.resume(job, hosts)  # a copy: fail the job again (each message once)
    if multicast is not None and job.hwcoll is None and not job.hwcoll_off:
        if multicast.off:
            actions.append(UpdateJob({"hwcoll_off": multicast.off}))
        else:
            step = str(job.jobid)
            actions.append(ReserveMulticast(multicast.fm_job_id, multicast.limit, step))
    return [*actions, SendTask(PROLOGS, prologs)]


def on_restore(
    job: JobRecord,
    *,
    hosts: list[str],
    cxi_enable: bool,
    pool: str,
    vnis: list[int],
    reason: str,
    dw: bool,
    started: bool,
) -> list[Action]:
    """The store lost the record of ``job``, which Flux runs on ``hosts`` with ``vnis``
    (its ``cray-slingshot`` event): hold its VNIs again, so that no other job is given
    them and its CLEANUP destroys its CXI services and frees them as if nothing had been
    lost. A job that ``started`` has its node work recorded as done and released; one
    still held in its prolog gets its node prologs from its RUN sent again (the nodes
    find their services made). A record that still holds its reservation is left."""
    if job.slingshot is not None:
        return []
    nodes_ = tuple(hosts) if cxi_enable and vnis else ()
    actions: list[Action] = [
        CreateRecord(job),
        # a record the Workflow's observe made again first has no user: the node epilogs
        # find the job's services by it
        UpdateJob({"userid": job.userid}),
        RestoreVnis(tuple(vnis), pool, reason, nodes_),
    ]
    if started:
        work = NodeWork(nodes=hosts, dw=dw, mounted=dw, released=True)
        actions.append(UpdateJob({"node_work": work}))
    return actions


def on_prologs(
    job: JobRecord,
    *,
    cores: Mapping[str, int],
    dw: bool,
    clientmount: bool,
    mounted: bool,
    now: float,
    timeout_s: float,
    mount_timeout_s: float,
    hwcoll_url: str,
    hwcoll_min_nodes: int | None,
    ready: AbstractSet[str] = frozenset(),
    stopped: AbstractSet[str] = frozenset(),
) -> list[Action]:
    """The job's reservations are made (its record says how): post its events, then plan
    and send its node prologs."""
    state = job.slingshot
    if state is None:  # job.run never got this far: nothing to send
        return []
    if state.failed:
        return slingshot.resume(job, sorted(cores))
    actions = slingshot.resume(job)  # the cray-slingshot event (once)
    if job.hwcoll is not None and not job.hwcoll.released:
        env = environment(job.hwcoll, hwcoll_url, hwcoll_min_nodes)
        actions += hwcoll.posts(job.jobid, job.hwcoll, env)
    elif job.hwcoll_off:
        actions += hwcoll.on_unavailable(job.jobid, job.hwcoll_off)
    # before the node prologs: the events and environment reach Flux before the job starts
    return actions + nodes.plan(
        job,
        cores=cores,
        dw=dw,
        cxi=slingshot.cxi_part(job),
        clientmount=clientmount,
        mounted=mounted,
        now=now,
        timeout_s=timeout_s,
        mount_timeout_s=mount_timeout_s,
        ready=ready,
        stopped=stopped,
    )
