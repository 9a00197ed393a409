"""Start the whole simulated system on loopback (DESIGN.md §6), and stop all of it.

Redis (a ``redis-server`` on a free port), the Kubernetes-compatible API
server with the DWS webhooks, Storages and the DWS controller, and the real
pipeline processes: a Celery worker and beat as subprocesses, the watcher
in a thread. :meth:`SimulatedSystem.stop` (also on Ctrl-C, via the context
manager) ends every process it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import ConfigError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.sim import dws_admission
from pipeline.sim.dws import DwsController
from pipeline.sim.dws_fixtures import install_cluster
from pipeline.sim.kube_api import KubeApiServer
from pipeline.sim.redis_server import RedisServer
from pipeline.store import Store
from pipeline.watch import Watcher


@dataclass
class SimulatedSystem:
    """Everything the demo runs; use as a context manager."""

    mapping: RabbitMapping
    latency_s: float = 0.005
    prefix: str = "demo"
    observe_only: bool = True
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="coral2-demo-")))
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    redis_url: str = ""
    redis: RedisServer | None = None
    kube: KubeApiServer | None = None
    controller: DwsController | None = None
    watcher: Watcher | None = None
    store: Store | None = None
    dws: DwsClient | None = None
    _threads: list[threading.Thread] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The environment every pipeline process gets."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = self.prefix
        if self.observe_only:
            env["CORAL2_PIPELINE_PIPELINE__OBSERVE_ONLY"] = "true"
        if self.redis_url:
            env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = self.redis_url
        if self.kube is not None:
            env["CORAL2_PIPELINE_PIPELINE__API_HOST"] = self.kube.url
        return env

    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.workdir / f"{name}.log").open("wb") as log:  # the child keeps its own fd
            self.processes.append(
                subprocess.Popen(
                    argv, env=self.env(), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir
                )
            )

    def _start_redis(self) -> None:
        self.redis = RedisServer(self.workdir, log=self.workdir / "redis.log").start()
        self.redis_url = self.redis.url

    def start(self) -> SimulatedSystem:
        """Start everything; return self."""
        self._start_redis()
        self.kube = KubeApiServer().start()
        dws_admission.install(self.kube.store)
        api = client.ApiClient(client.Configuration(host=self.kube.url))
        self.dws = DwsClient(api)
        install_cluster(self.dws, self.mapping)
        self.controller = DwsController(api, latency_s=self.latency_s).start()
        celery = [sys.executable, "-m", "celery", "-A", "pipeline.app"]
        self._spawn(
            "worker",
            [
                *celery,
                "worker",
                "-Q",
                "lifecycle,timeouts,housekeeping",
                "--pool=threads",
                "--concurrency=4",
                "-E",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
                "-n",
                "demo@%h",
            ],
        )
        self._spawn(
            "beat",
            [*celery, "beat", "--loglevel=WARNING", "-s", str(self.workdir / "beat-schedule")],
        )
        self.store = Store.from_url(self.redis_url, self.prefix)
        from pipeline.app import create_app
        from pipeline.settings import load_settings

        app = create_app(
            load_settings(env={k: v for k, v in self.env().items() if k.startswith("CORAL2_")})
        )
        app.send_task("housekeeping.ping", args=["ready"]).get(timeout=120)  # the worker is up
        self.watcher = Watcher(
            self.store, self.dws, lambda name, kw: app.send_task(name, kwargs=kw), lease_s=2.0
        )
        thread = threading.Thread(target=self.watcher.run, name="watcher", daemon=True)
        thread.start()
        self._threads.append(thread)
        deadline = time.monotonic() + 30
        while not self.watcher.leading:
            if time.monotonic() > deadline:
                raise ConfigError("the watcher did not become leader; is Redis reachable?")
            time.sleep(0.01)
        return self

    def alive(self) -> list[str]:
        """Names of the started processes that died (empty when all run)."""
        dead = [
            name
            for name, p in zip(("worker", "beat"), self.processes, strict=False)
            if p.poll() is not None
        ]
        if (
            self.redis is not None
            and self.redis.process is not None
            and self.redis.process.poll() is not None
        ):
            dead.append("redis")
        return dead

    def stop(self) -> None:
        """Stop everything that was started, newest first."""
        if self.watcher is not None:
            self.watcher.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        if self.controller is not None:
            self.controller.stop()
        for proc in reversed(self.processes):  # beat, worker; then redis last
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.redis is not None:
            self.redis.stop()
        if self.kube is not None:
            self.kube.stop()

    def __enter__(self) -> SimulatedSystem:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()
