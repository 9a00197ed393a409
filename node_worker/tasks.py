"""The node tasks, module-level functions a :class:`~node_worker.app.NodeWorker` registers
on its Celery app (``node.prolog``, ``node.clientmount``, ``node.epilog`` and the
operator's ``node.cxi_list``, ``node.cxi_clean``, ``node.ping``).

Each is bound (its first argument the task) and finds the worker it runs in on its app
(:func:`worker_of`): the worker resolves and checks the node a message is for, then the
job's steps (:mod:`node_worker.steps`) do the work and answer on the node's stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from node_worker import steps
from node_worker.cxi import clean_services, env_devices
from pipeline.model.idset import decode_idset

T = TypeVar("T")

#: The attribute of the Celery app that holds the worker its tasks run in.
WORKER = "coral2_node_worker"


class Worker(steps.Host, Protocol):
    """What a node task needs of the worker it runs in (a
    :class:`~node_worker.app.NodeWorker` is one), besides what its steps need."""

    def host_of(self, task: Any, hostname: str) -> str: ...

    def check(self, task: Any, hostname: str) -> None: ...

    def answer(self, name: str, **kwargs: Any) -> None: ...


def worker_of(task: Any) -> Worker:
    """The node worker whose app runs ``task``."""
    worker: Worker = getattr(task.app, WORKER)
    return worker


def _job_step(
    run: Callable[[steps.Host, steps.Answer, steps.JobStep], T],
) -> Callable[..., T]:
    """A ``node.prolog`` or ``node.epilog`` task: the message's node resolved and checked
    by the worker, then the step ``run`` on it."""

    def task(
        task: Any,
        jobid: int,
        userid: int,
        clientmount: str | None = None,
        cxi: dict[str, Any] | None = None,
        hostname: str = "",
    ) -> T:
        worker = worker_of(task)
        host = worker.host_of(task, hostname)
        step = steps.JobStep(str(task.request.id), host, jobid, userid, clientmount, cxi)
        return run(worker, worker.answer, step)

    task.__name__ = task.__qualname__ = run.__name__
    task.__doc__ = run.__doc__
    return task


#: ``node.prolog``: the job's CXI services and clientmount service on the node.
prolog = _job_step(steps.prolog)
#: ``node.epilog``: the job's CXI services destroyed, its clientmount service started.
epilog = _job_step(steps.epilog)


def clientmount(task: Any, jobid: int, action: str, hostname: str = "") -> str:
    """``node.clientmount``: start or stop the node's clientmount service for the job."""
    worker = worker_of(task)
    host = worker.host_of(task, hostname)
    return steps.clientmount(worker, worker.answer, str(task.request.id), host, jobid, action)


def cxi_list(task: Any, hostname: str) -> list[dict[str, object]]:
    """``node.cxi_list``: the node's CXI services, as ``slingshot env`` shows them."""
    worker = worker_of(task)
    worker.check(task, hostname)
    return env_devices(worker.nic(hostname))


def cxi_clean(task: Any, hostname: str, pool: str) -> dict[str, list[str]]:
    """``node.cxi_clean``: destroy the node's CXI services of the pool's VNIs that no
    process uses (``slingshot clean``)."""
    worker = worker_of(task)
    worker.check(task, hostname)
    destroyed, busy = clean_services(worker.nic(hostname), decode_idset(pool))
    return {"destroyed": destroyed, "busy": busy}


def ping(task: Any, hostname: str) -> str:
    """``node.ping``: the node worker of ``hostname`` answers."""
    worker_of(task).check(task, hostname)
    return hostname
