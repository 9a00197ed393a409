"""The node worker process: a Celery worker on ``node.<hostname>`` queues.

``coral2-pipeline node-worker --hostname H`` runs one per compute node in
production, with the systemd ``nnf-clientmount`` unit. One process may
serve a hostlist of nodes: the demo and the tests run a single worker for
every compute, given the simulated service and clientmount daemon by the
command line (``--backend simulated``, ``pipeline.sim.node``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from celery import Celery

from node_worker import perilog
from node_worker.cxi import Nic, create_job_services, destroy_job_services
from node_worker.service import ClientmountService
from pipeline.clients.k8s import DwsClient, api_client
from pipeline.errors import CxiError
from pipeline.platform.config import celery_config
from pipeline.platform.routing import node_queue
from pipeline.settings import Settings
from pipeline.store import Store

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
        dws: DwsClient | None = None,
        companion: Companion | None = None,
        nic_of: Callable[[str], Nic] | None = None,
    ) -> None:
        self.settings = settings
        self.hosts = hosts
        self.queues = [settings.pipeline.queues.node_prefix + h for h in hosts]
        for host in hosts:
            node_queue(host)  # refuses a hostname that cannot name a queue
        self.store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
        self.dws = dws or dws_client(settings)
        self.service = service
        self.companion = companion
        self.nic_of = nic_of
        self.app = self._app()

    def _nic(self, hostname: str) -> Nic:
        if self.nic_of is None:
            raise CxiError(f"{hostname}: this node worker drives no CXI devices (--nic none)")
        return self.nic_of(hostname)

    def _check(self, hostname: str) -> None:
        if hostname not in self.hosts:
            raise ValueError(f"node task for {hostname!r} reached the worker of {self.hosts}")

    def _app(self) -> Celery:
        app = Celery("coral2_node_worker", set_as_current=False)
        app.conf.update(celery_config(self.settings))
        timeout_s = self.settings.rabbit.prolog_timeout

        @app.task(name="node.prolog", acks_late=True)  # type: ignore[untyped-decorator]
        def prolog(hostname: str, jobid: int, dw: bool) -> str:
            self._check(hostname)
            return perilog.prolog(
                hostname,
                jobid,
                dw,
                dws=self.dws,
                store=self.store,
                service=self.service,
                timeout_s=timeout_s,
            )

        @app.task(name="node.epilog", acks_late=True)  # type: ignore[untyped-decorator]
        def epilog(hostname: str, jobid: int) -> str:
            self._check(hostname)
            return perilog.epilog(hostname, self.service)

        lifecycle = self.settings.pipeline.queues.lifecycle

        def answer(name: str, **kwargs: Any) -> None:
            app.send_task(name, kwargs=kwargs, queue=lifecycle)

        @app.task(name="node.cxi_prolog", acks_late=True, bind=True)  # type: ignore[untyped-decorator]
        def cxi_prolog(
            task: Any, hostname: str, jobid: int, userid: int, vnis: list[int], ncores: int
        ) -> dict[str, int]:
            self._check(hostname)
            ready = {"jobid": jobid, "node": hostname, "task_id": task.request.id}
            try:
                created = create_job_services(self._nic(hostname), userid, vnis, ncores)
            except CxiError as exc:
                answer("slingshot.node_ready", **ready, error=str(exc))
                return {}
            for warning in created.warnings:
                log.warning("job %s on %s: %s", jobid, hostname, warning)
            answer("slingshot.node_ready", **ready)
            return created.services

        @app.task(name="node.cxi_epilog", acks_late=True, bind=True)  # type: ignore[untyped-decorator]
        def cxi_epilog(
            task: Any, hostname: str, jobid: int, userid: int, vnis: list[int]
        ) -> list[str]:
            self._check(hostname)
            busy = destroy_job_services(self._nic(hostname), userid, vnis)
            answer(
                "slingshot.node_clean",
                jobid=jobid,
                node=hostname,
                task_id=task.request.id,
                busy=busy,
            )
            return busy

        @app.task(name="node.ping")  # type: ignore[untyped-decorator]
        def ping(hostname: str) -> str:
            self._check(hostname)
            return hostname

        return app

    def run(self, concurrency: int, loglevel: str = "WARNING") -> Any:
        """Run the worker until it is told to stop (SIGTERM/SIGINT)."""
        if self.companion is not None:
            self.companion.start()
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
                    f"--loglevel={loglevel}",
                    "-n",
                    f"node-{self.hosts[0]}@%h",
                ]
            )
        finally:
            if self.companion is not None:
                self.companion.stop()


def dws_client(settings: Settings) -> DwsClient:
    """The DWS client of ``settings``."""
    kubeconfig = settings.pipeline.kubeconfig or settings.rabbit.kubeconfig
    return DwsClient(
        api_client(host=settings.pipeline.api_host, kubeconfig=kubeconfig),
        namespace=settings.pipeline.namespace,
    )
