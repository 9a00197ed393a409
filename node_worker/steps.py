"""The steps of a job's work on a node, one function each, as the node tasks run them.

Each takes the worker it runs in (:class:`Host`, as :class:`~node_worker.app.NodeWorker`
is one: its clientmount service, its NICs, its notes of ended jobs and unended attempts,
the job's lock on the node) and how to answer (:data:`Answer`: one entry on the node's
answers stream), so that each can be run and tested alone. The node tasks of
:mod:`node_worker.tasks` resolve the node a message is for, then call these.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from node_worker import perilog
from node_worker.attempts import MAX_UNENDED, Attempts
from node_worker.cxi import Nic
from node_worker.ended import EndedJobs
from node_worker.service import ClientmountService
from pipeline.model.answers import AnswerName
from pipeline.platform import nodework
from pipeline.settings import Settings
from pipeline.states.nodes import PROLOG_EXCEPTION

log = logging.getLogger("coral2_pipeline.node_worker")

#: How a step answers: the answer's name and its arguments.
Answer = Callable[..., None]


@dataclass(frozen=True)
class JobStep:
    """One job step's message on one node: the task that carries it, the node, the job
    and its user, what to do with the clientmount service, and the CXI part."""

    task_id: str
    hostname: str
    jobid: int
    userid: int
    clientmount: str | None = None
    cxi: dict[str, Any] | None = None


class Host(Protocol):
    """What a step needs of the worker it runs in."""

    settings: Settings
    service: ClientmountService
    ended: EndedJobs
    attempts: Attempts

    def job_on(
        self, hostname: str, jobid: int, *, last: bool = False
    ) -> AbstractContextManager[None]: ...

    def nic(self, hostname: str) -> Nic: ...


def prolog(worker: Host, answer: Answer, step: JobStep) -> dict[str, int]:
    """The job's prolog on its node: its CXI services and its clientmount service, under
    the job's lock on the node (never in the middle of its epilog). A late copy (the epilog
    has run) answers ``late``; one that killed the worker each time is answered failed."""
    task_id, hostname, jobid = step.task_id, step.hostname, step.jobid
    nodework.trace("took", "node.prolog", jobid, hostname, task_id)
    with worker.job_on(hostname, jobid):
        done: dict[str, Any] = {"jobid": jobid, "node": hostname, "task_id": task_id}
        if worker.ended.ended(hostname, jobid):  # a late copy: the epilog has run
            log.info("node.prolog of job %s on %s after its epilog: ignored", jobid, hostname)
            answer(AnswerName.PROLOG, **done, late=True)
            return {}
        unended = worker.attempts.begin(task_id)
        if unended >= MAX_UNENDED:  # it killed this worker each time: answer, not run
            worker.attempts.end(task_id)
            why = f"node.prolog died with the node worker {unended} times on {hostname}"
            log.error("job %s: %s; answered as failed", jobid, why)
            answer(AnswerName.PROLOG, **done, error=why, error_type=PROLOG_EXCEPTION)
            return {}
        try:
            outcome = perilog.prolog(
                hostname,
                jobid,
                step.userid,
                clientmount=step.clientmount,
                cxi=step.cxi,
                service=worker.service,
                nic_of=worker.nic,
            )
        finally:
            worker.attempts.end(task_id)
        if outcome.error:
            done.update(error=outcome.error, error_type=outcome.error_type)
        answer(AnswerName.PROLOG, **done)
        return outcome.services


def clientmount(
    worker: Host, answer: Answer, task_id: str, hostname: str, jobid: int, action: str
) -> str:
    """Start or stop the clientmount service of ``hostname`` for the job; a stop that comes
    after the job's epilog (which started the service for the unmounts) is ignored."""
    nodework.trace("took", f"node.clientmount {action}", jobid, hostname, task_id)
    done = {"jobid": jobid, "node": hostname, "task_id": task_id}
    with worker.job_on(hostname, jobid):  # never in the middle of the job's epilog
        late = action == "stop" and worker.ended.ended(hostname, jobid)
        if not late:
            perilog.clientmount(hostname, action, worker.service)
    if late:
        log.info("clientmount stop of job %s on %s after its epilog: ignored", jobid, hostname)
        answer(AnswerName.CLIENTMOUNT, **done, late=True)
        return "ignored"
    answer(AnswerName.CLIENTMOUNT, **done)
    return action


def epilog(worker: Host, answer: Answer, step: JobStep) -> list[str]:
    """The job's epilog on its node: its CXI services destroyed (those still in use are
    answered ``busy``), its clientmount service started. Noted first, so that no later
    copy of the prolog undoes it; a late copy whose services are gone destroys nothing
    (services with the job's user and VNIs now belong to a later job)."""
    task_id, hostname, jobid, cxi = step.task_id, step.hostname, step.jobid, step.cxi
    nodework.trace("took", "node.epilog", jobid, hostname, task_id)
    with worker.job_on(hostname, jobid, last=True):
        worker.ended.note(hostname, jobid)  # before acting: no prolog copy undoes it
        if cxi is not None and worker.ended.clean(hostname, jobid):
            log.info("node.epilog of job %s on %s: its services are gone", jobid, hostname)
            cxi = None
        outcome = perilog.epilog(
            hostname,
            step.userid,
            clientmount=step.clientmount,
            cxi=cxi,
            service=worker.service,
            nic_of=worker.nic,
            busy_wait_s=worker.settings.pipeline.cxi_epilog_wait,
        )
        if cxi is not None and not outcome.busy:
            worker.ended.note_clean(hostname, jobid)
    answer(AnswerName.EPILOG, jobid=jobid, node=hostname, task_id=task_id, busy=outcome.busy)
    return outcome.busy
