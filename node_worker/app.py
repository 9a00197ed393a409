"""The node worker process: a Celery worker on ``node.<hostname>`` queues.

``coral2-pipeline node-worker --hostname H`` runs one per compute node in
production, with the systemd ``nnf-clientmount`` unit. One process may
serve a hostlist of nodes: the demo and the tests run a single worker for
every compute, given the simulated service and clientmount daemon by the
command line (``--backend simulated``, ``coral2_sim.node``).

The worker waits for nothing and polls nothing: each task does one step of
a job's node work (:mod:`node_worker.perilog`) and answers on the answers
stream, signed with the node's key and naming the task it ends
(:mod:`pipeline.platform.answers`). It holds no Kubernetes credentials and
reads no job record.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, Protocol

from celery import Celery
from celery.exceptions import Reject
from celery.signals import worker_ready, worker_shutting_down

from node_worker import tasks
from node_worker.attempts import Attempts
from node_worker.cxi import Nic
from node_worker.ended import EndedJobs
from node_worker.heartbeat import Heartbeat
from node_worker.service import ClientmountService
from pipeline.errors import CxiError
from pipeline.model.answers import cut, parse
from pipeline.model.node_messages import NodeTask
from pipeline.platform import deadletters, nodework, supervision  # noqa: F401  (its signal handlers)
from pipeline.platform.answers import answers_key, encode
from pipeline.platform.config import node_worker_config
from pipeline.platform.routing import node_queue
from pipeline.platform.signing import CLAIM, manifest_host, secure
from pipeline.settings import Settings

log = logging.getLogger("coral2_pipeline.node_worker")


class Companion(Protocol):
    """Something that runs beside the worker (the simulated clientmount daemon)."""

    def start(self) -> object: ...

    def stop(self) -> None: ...


class NodeWorker:
    """The Celery app with the node tasks for ``hosts``, and what they need."""

    def __init__(
        self,
        settings: Settings,
        hosts: list[str],
        service: ClientmountService,
        *,
        companion: Companion | None = None,
        nic_of: Callable[[str], Nic] | None = None,
        ended: EndedJobs | None = None,
        answers_to: str | None = None,
    ) -> None:
        self.settings = settings
        #: the stream its answers go to instead of each node's own (the node emulator holds
        #: them on one of its own)
        self.answers_to = answers_to
        self.hosts = hosts
        self.prefix = settings.pipeline.queues.node_prefix
        self.queues = [self.prefix + h for h in hosts]
        for host in hosts:
            node_queue(host)  # refuses a hostname that cannot name a queue
        self.service = service
        self.companion = companion
        self.nic_of = nic_of
        self.ended = ended or EndedJobs(None)
        self.attempts = Attempts(self.ended.directory)
        self._job_locks: dict[tuple[str, int], threading.Lock] = {}
        self._job_locks_lock = threading.Lock()
        self.app = self._app()

    @contextlib.contextmanager
    def job_on(self, hostname: str, jobid: int, *, last: bool = False) -> Iterator[None]:
        """Hold the lock of job ``jobid`` on ``hostname``: its prolog (a late copy included)
        and its epilog, run by two threads of this worker, never interleave, so a copy of
        the prolog cannot create services the epilog has just destroyed. ``last``: the
        epilog; the lock is dropped after it (a later copy finds the job ended)."""
        key = (hostname, jobid)
        with self._job_locks_lock:
            lock = self._job_locks.setdefault(key, threading.Lock())
        with lock:
            yield
        if last:
            with self._job_locks_lock:
                self._job_locks.pop(key, None)

    def nic(self, hostname: str) -> Nic:
        if self.nic_of is None:
            raise CxiError(f"{hostname}: this node worker drives no CXI devices (--nic none)")
        return self.nic_of(hostname)

    def host_of(self, task: Any, hostname: str) -> str:
        """The node a job step is for: its ``hostname`` argument, or for a copy of a signed
        manifest (``pipeline.platform.fanout``), the node its id names among the
        manifest's nodes (the consumer verified the signature); checked by :meth:`_check`."""
        if not hostname:
            claim = getattr(task.request, CLAIM, None)
            host = manifest_host(task.request.id, claim)
            if host is None:
                self._refuse(task, f"node task {task.request.id!r} names no node of its manifest")
            hostname = host
        self.check(task, hostname)
        return hostname

    def check(self, task: Any, hostname: str) -> None:
        """Refuse a task for another node, or one that came in on another node's queue: set
        aside as a dead letter (on this node's own stream), never run, never a task error."""
        if hostname not in self.hosts:
            self._refuse(task, f"node task for {hostname!r} reached the worker of {self.hosts}")
        if task.request.is_eager:
            return  # run in this process by its own code (the tests), from no queue
        # the queue the broker read it from (pipeline.platform.broker), not its sender's word
        queue = (task.request.delivery_info or {}).get("routing_key")
        if queue != self.prefix + hostname:
            self._refuse(task, f"node task for {hostname!r} came in on queue {queue!r}")

    def _refuse(self, task: Any, why: str) -> NoReturn:
        """Set ``task``'s message aside as a dead letter and drop it (:class:`Reject`)."""
        if task.request.is_eager:
            raise ValueError(why)
        info = task.request.delivery_info or {}
        where = str(info.get("routing_key") or "?")
        raw = f"task {task.name} id {task.request.id} kwargs {task.request.kwargs!r}"[:4096]
        with self.app.connection_for_write() as connection:
            client = connection.default_channel.client
            deadletters.set_aside(client, self.settings.pipeline.key_prefix, where, raw, why)
        raise Reject(why, requeue=False)

    def _app(self) -> Celery:
        app = Celery("coral2_node_worker", set_as_current=False)
        app.conf.update(node_worker_config(self.settings, self.hosts))
        # it trusts the management side alone, and signs each answer with the key of the
        # node it answers for
        secure(app, self.settings.pipeline, hosts=self.hosts, node=True)
        nodework.configure(self.settings.pipeline)
        setattr(app, tasks.WORKER, self)  # where its tasks find it (tasks.worker_of)
        # a job's steps answer on the answers stream: nobody reads their result
        job_step = functools.partial(
            app.task, shared=False, acks_late=True, bind=True, ignore_result=True
        )
        job_step(name=NodeTask.PROLOG)(tasks.prolog)
        job_step(name=NodeTask.CLIENTMOUNT)(tasks.clientmount)
        job_step(name=NodeTask.EPILOG)(tasks.epilog)
        operator = functools.partial(app.task, shared=False, bind=True)
        operator(name="node.cxi_list")(tasks.cxi_list)
        operator(name="node.cxi_clean")(tasks.cxi_clean)
        operator(name="node.ping")(tasks.ping)
        return app

    def answer(self, name: str, **kwargs: Any) -> None:
        """Answer on the stream of the node ``kwargs["node"]`` names: one XADD, the one key
        the node's Redis user may write, signed with that node's key."""
        if kwargs.get("error"):  # a reason longer than the reader takes is cut here
            kwargs["error"] = cut(str(kwargs["error"]))
        made = parse(name, kwargs)
        entry = encode(self.app, made)
        stream = self.answers_to or answers_key(self.settings.pipeline, made.node)
        # on the command connection send_task would use (not the channel's polling one)
        with (
            self.app.producer_or_acquire() as producer,
            producer.channel.conn_or_acquire() as client,
        ):
            client.xadd(stream, entry)
        detail = ", ".join(f"{k}={kwargs[k]}" for k in ("error", "late", "busy") if kwargs.get(k))
        nodework.trace("answered", name, kwargs.get("jobid"), kwargs.get("node"), detail)

    def dead_letters_to(self, where: str) -> str:
        """The answers stream a dead letter from ``where`` (a queue) goes onto: its node's,
        the one key the node may write."""
        host = where.removeprefix(self.prefix)
        host = host if host in self.hosts else self.hosts[0]
        return self.answers_to or answers_key(self.settings.pipeline, host)

    def heartbeat(self) -> Heartbeat:
        """The heartbeat of the nodes it serves (not yet started)."""
        keys = [f"{self.settings.pipeline.key_prefix}:node-alive:{h}" for h in self.hosts]
        return Heartbeat(self.app, keys, self.settings.pipeline.node_heartbeat)

    def run(self, concurrency: int, loglevel: str = "WARNING") -> Any:
        """Run the worker until it is told to stop (SIGTERM/SIGINT)."""
        deadletters.to_node_streams(self.dead_letters_to)
        if self.companion is not None:
            self.companion.start()
        # it beats once its consumer reads its queues, and its heartbeat keys go as soon
        # as it is told to stop
        heartbeat = self.heartbeat()
        worker_ready.connect(lambda **_: heartbeat.start(), weak=False)
        worker_shutting_down.connect(lambda **_: heartbeat.stop(), weak=False)
        try:
            return self.app.worker_main(
                [
                    "worker",
                    "-Q",
                    ",".join(self.queues),
                    "--pool=threads",
                    f"--concurrency={concurrency}",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    f"--loglevel={loglevel}",
                    "-n",
                    f"node-{self.hosts[0]}@%h",
                ]
            )
        finally:
            heartbeat.stop()
            if self.companion is not None:
                self.companion.stop()
