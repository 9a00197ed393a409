"""Start the whole simulated system on loopback, and stop all of it.

Redis (a ``redis-server`` on a free port); the Kubernetes-compatible API
server with the DWS webhooks, Storages and the DWS controller
(``coral2-pipeline sim kube-api --with-dws``); and the real pipeline
processes — Celery worker, beat, watcher, node worker — each a subprocess,
as in production, so none shares an interpreter lock with another. The
simulated Flux job manager and its outbox delivery run in the caller's
process. :meth:`SimulatedSystem.stop` (also on Ctrl-C, via the context
manager) ends every process it started.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery import Celery

from coral2_sim import procstat
from coral2_sim.dws_real import RealDws, RealDwsStack
from coral2_sim.fabric import FabricManagerSim
from coral2_sim.flux.delivery import DeliveryThread
from coral2_sim.flux.jobmanager import JobManager
from coral2_sim.flux_side import CLUSTER, start_flux
from coral2_sim.keys import cached_signers, demo_signers
from coral2_sim.kube.identities import PIPELINE_USER, KubeEndpoint
from coral2_sim.kube.sim_paths import FAULTS_PATH
from coral2_sim.kube_process import start_kube_api
from coral2_sim.node_side import emulator_times, start_node_side
from coral2_sim.processes import Processes
from coral2_sim.redis_server import RedisServer
from coral2_sim.users import DemoUsers
from pipeline.clients.k8s import DwsClient
from pipeline.errors import ConfigError
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform.node_results import ask
from pipeline.platform.sealing import seal_of
from pipeline.platform.sending import settings_of
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings
from pipeline.store import Store


@dataclass
class SimulatedSystem:
    """Everything the demo runs; use as a context manager."""

    mapping: RabbitMapping
    latency_s: float = 0.005
    prefix: str = "demo"
    observe_only: bool = True
    config: str | None = None
    with_flux: bool = False
    epilog_timeout_s: float = 0.0
    runtime_s: float = 0.2
    node_workers: bool = False
    #: with ``node_workers``: serve the computes' queues with this many light emulator
    #: processes (``coral2-pipeline sim node-emulator``, no clientmount daemon) instead of
    #: one Celery node worker — the fan-out benchmarks; ``emulator_hold``: each waits for
    #: that many messages, then hands its nodes' answers over at once (0: no holding)
    node_emulators: int = 0
    emulator_hold: int = 0
    #: give every compute four simulated Cassini NICs and CXI services to every job
    slingshot: bool = False
    #: sign every task message: the management side and the node workers each with their
    #: own key, made at start (coral2_sim.keys)
    signing: bool = False
    #: with ``signing``: keep the keys made here for the next run with the same computes
    #: (a whole machine's take minutes to make: the fan-out benchmark's)
    key_cache: Path | None = None
    #: Redis with a user per role (pipeline.platform.acl), passwords made at start
    acl: bool = False
    #: uids whose jobs leave processes behind, keeping their CXI services busy until an
    #: admin ends them (:meth:`nic_state`, coral2_sim.node.cassini.end_stray_processes)
    cxi_busy: tuple[int, ...] = ()
    extra_env: dict[str, str] = field(default_factory=dict)
    node_env: dict[str, str] = field(default_factory=dict)
    #: more environment for one process, by its name (e.g. flower's credentials)
    process_env: dict[str, dict[str, str]] = field(default_factory=dict)
    worker_concurrency: int = 4
    worker_pool: str = "threads"
    workers: int = 1
    reconcilers: int = 4
    #: how long the simulated nnf waits for a ClientMount before its Major error (s)
    mount_timeout_s: float = 30.0
    lease_s: float = 1.0
    #: the Celery worker's and beat's log level (INFO to follow each task)
    loglevel: str = "WARNING"
    #: faults at random (the chaos harness): this share of the pipeline's API requests
    #: answered 500/503/409/410 or their watch broken, this share of Workflows struck
    #: by a TransientCondition or an Error, the mounts of this share of Workflows slow
    #: (``(share, seconds)``), drawn from ``fault_seed``
    api_fault_rate: float = 0.0
    #: a simulated fabric manager, and hardware collectives for jobs of this many nodes
    #: or more (None: no fabric manager)
    hwcoll_min_nodes: int | None = None
    fabric: FabricManagerSim | None = None
    workflow_fault_rate: float = 0.0
    slow_mounts: tuple[float, float] | None = None
    #: rabbits whose storage never comes up in Setup (``sim kube-api --slow-rabbits``)
    slow_rabbits: tuple[str, ...] = ()
    #: path prefixes whose copies the simulated nnf-dm fails (``sim kube-api --fail-copies``)
    failed_copies: tuple[str, ...] = ()
    #: Redis's ``appendfsync``: ``everysec`` as deploy/redis ships it, or ``always``
    appendfsync: str = "everysec"
    #: False: DWS without SystemStatus ``default`` (``sim kube-api --no-systemstatus``)
    systemstatus: bool = True
    fault_seed: int = 1
    #: the API server authenticates by token and enforces our RBAC rules for the pipeline's
    #: ServiceAccount, as a site's does (:mod:`coral2_sim.kube.identities`)
    rbac: bool = True
    #: "real": the real DWS and nnf-sos on a real API server (:mod:`coral2_sim.dws_real`)
    #: instead of the simulated ones; it needs ``make dws-real``
    dws_stack: str = "simulated"
    real_dws: RealDwsStack | None = None
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="coral2-demo-")))
    redis_url: str = ""
    redis: RedisServer | None = None
    kube: KubeEndpoint | None = None
    store: Store | None = None
    dws: DwsClient | None = None
    flux: JobManager | None = None
    hooks: Hooks | None = None
    delivery: DeliveryThread | None = None
    app: Celery | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    users: DemoUsers | None = None
    #: added to every pipeline process's environment, not the API server's: a
    #: :class:`~coral2_sim.clock.SteppingClock`'s, for a host clock that steps
    clock_env: dict[str, str] = field(default_factory=dict)
    procs: Processes = field(init=False)

    def __post_init__(self) -> None:
        self.procs = Processes(self.workdir, self._env_of)

    def env(self) -> dict[str, str]:
        """The environment every pipeline process gets."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = self.prefix
        env.pop("CORAL2_PIPELINE_CONFIG", None)
        if self.config:
            env["CORAL2_PIPELINE_CONFIG"] = str(Path(self.config).resolve())
        env["CORAL2_PIPELINE_RABBIT__MAPPING"] = str(self.workdir / "rabbitmapping.json")
        env["CORAL2_PIPELINE_PIPELINE__CLUSTER_NAME"] = CLUSTER
        if self.slingshot:
            env["CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE"] = "true"
        if self.node_workers:
            env["CORAL2_PIPELINE_PIPELINE__CLIENTMOUNT"] = "true"
        env.update(self.extra_env)
        if self.observe_only:
            env["CORAL2_PIPELINE_PIPELINE__OBSERVE_ONLY"] = "true"
        if self.redis_url:
            env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = self.redis_url
        if self.kube is not None and self.kube.pipeline_kubeconfig is not None:
            env["CORAL2_PIPELINE_PIPELINE__KUBECONFIG"] = str(self.kube.pipeline_kubeconfig)
        elif self.kube is not None:
            env["CORAL2_PIPELINE_PIPELINE__API_HOST"] = self.kube.url
        return env

    def spawn(self, name: str, argv: list[str]) -> None:
        """Start ``argv`` as the process ``name`` (:class:`Processes`)."""
        self.procs.spawn(name, argv)

    def _env_of(self, name: str) -> dict[str, str]:
        """The environment of the process ``name``."""
        env = self.env()
        if name.startswith("node-"):  # a compute node has no Kubernetes identity
            env.update(self.node_env)
            env.pop("CORAL2_PIPELINE_PIPELINE__KUBECONFIG", None)
            env.pop("CORAL2_PIPELINE_PIPELINE__API_HOST", None)
        env.update(self.process_env.get(name, {}))
        env = {k: v for k, v in env.items() if v != ""}  # "" in process_env: unset
        if name != "kube-api":
            env.update(self.clock_env)
        return env

    def kill(self, name: str) -> None:
        """SIGKILL the process ``name`` (a crash: no cleanup, nothing acknowledged)."""
        self.procs.kill(name)

    def restart(self, name: str) -> None:
        """Start the process ``name`` again (after :meth:`kill`)."""
        self.procs.restart(name)

    def role_env(self, role: str) -> dict[str, str]:
        """The settings that log a process in to Redis as ``role`` (with :attr:`acl`)."""
        assert self.users is not None
        return self.users.role_env(role)

    def _make_users(self) -> Path:
        """The users by role; each process is given its role's user."""
        env = {k: v for k, v in self.env().items() if k.startswith("CORAL2_")}
        users = self.users = DemoUsers.make(
            self.workdir, load_settings(env=env), self.mapping.computes
        )
        self.extra_env.update(users.role_env("management"))
        self.process_env.setdefault("watcher", {}).update(users.role_env("watcher"))
        self.node_env.update(users.role_env("node"))
        return users.aclfile

    def own_url(self) -> str:
        """The Redis URL this process uses: the management user's, with :attr:`acl`."""
        return (
            self.redis_url if self.users is None else self.users.url(self.redis_url, "management")
        )

    def acl_denials(self) -> list[str]:
        """What Redis refused a process's user since start (``ACL LOG``)."""
        if self.users is None or self.redis is None:
            return []
        return self.users.denials(self.redis_url)

    def api_refusals(self) -> list[str]:
        """What the API server refused the pipeline's account since start: the simulated
        one's RBAC record, the real one's audit log."""
        if self.real_dws is not None:
            return self.real_dws.refused(PIPELINE_USER)
        assert self.kube is not None
        return self.kube.rbac()[1]

    def _start_redis(self) -> None:
        aclfile = self._make_users() if self.acl else None
        # with an append-only file, as production runs it: a restart of it is a real one
        self.redis = RedisServer(
            self.workdir,
            log=self.workdir / "redis.log",
            aof=True,
            appendfsync=self.appendfsync,
            aclfile=aclfile,
            login=None if self.users is None else self.users.admin,
        ).start()
        self.redis_url = self.redis.url

    def start(self) -> SimulatedSystem:
        """Start everything; return self."""
        (self.workdir / "rabbitmapping.json").write_text(self.mapping.model_dump_json(indent=1))
        if self.signing:
            keys, computes = self.workdir / "keys", self.mapping.computes
            if self.key_cache is not None:
                management, node = cached_signers(keys, computes, self.key_cache)
            else:
                management, node = demo_signers(keys, computes)
            self.extra_env.update(management.env())
            self.node_env.update(node.env())
        self._start_redis()
        if self.hwcoll_min_nodes is not None:
            self._start_fabric()
        if self.dws_stack == "real":
            self.real_dws = RealDwsStack(RealDws.find(), self.workdir / "dws-real", self.mapping)
            self.kube = self.real_dws.start()
        else:
            self.kube = start_kube_api(self)
        assert self.kube is not None
        self.dws = DwsClient(self.kube.api())
        celery = [sys.executable, "-m", "celery", "-A", "pipeline.app"]
        for index in range(self.workers):
            # as production starts it (`coral2-pipeline worker`): its plugins installed
            # (the chaos harness's kill points), its queues from the settings
            self.spawn(
                "worker" if index == 0 else f"worker-{index + 1}",
                [
                    sys.executable,
                    "-m",
                    "pipeline.cli",
                    "worker",
                    "--",
                    f"--pool={self.worker_pool}",
                    f"--concurrency={self.worker_concurrency}",
                    "--without-gossip",
                    "--without-mingle",
                    f"--loglevel={self.loglevel}",
                    "-n",
                    f"demo{index + 1}@%h",
                ],
            )
        self.spawn(
            "beat",
            [
                *celery,
                "beat",
                f"--loglevel={self.loglevel}",
                "-s",
                str(self.workdir / "beat-schedule"),
            ],
        )
        from pipeline.platform.app import create_app

        settings = load_settings(
            env={k: v for k, v in self.env().items() if k.startswith("CORAL2_")}
        )
        # the outbox delivery below checks that a worker signed each entry (signing on)
        self.store = Store.from_url(self.own_url(), self.prefix, seal_of(settings.pipeline))
        self.app = create_app(settings, set_current=False)
        self.wait_worker()
        if self.node_workers:
            start_node_side(self)
        argv = [sys.executable, "-m", "pipeline.cli", "watch", "--lease", str(self.lease_s)]
        self.spawn("watcher", argv)
        self.wait_for_watcher()
        if self.with_flux:
            start_flux(self, settings)
        return self

    def _start_fabric(self) -> None:
        """The simulated fabric manager, and the settings that send the workers to it."""
        fabric = self.fabric = FabricManagerSim().start()
        self.extra_env.update(fabric.pipeline_env(self.workdir / "fm", self.hwcoll_min_nodes))

    def dws_faults(self, **faults: list[str]) -> dict[str, list[str]]:
        """Set the simulated DWS side's faults while it runs (``slow_rabbits``,
        ``never_mount``, ``never_unmount``, ``failed_copies``: each a whole list); return
        them as they are now."""
        assert self.kube is not None
        now: dict[str, list[str]] = self.kube.sim(FAULTS_PATH, faults)
        now.pop("drawn", None)
        return now

    def end_api_faults(self) -> dict[str, int]:
        """Answer every API request from now on; return the faults drawn so far, by code
        ("0": a broken watch)."""
        assert self.kube is not None
        drawn: dict[str, int] = self.kube.sim(FAULTS_PATH, {"rate": 0})["drawn"]
        return drawn

    def wait_for_watcher(self, timeout_s: float = 30) -> None:
        """Wait until the watcher process holds the leader lease (its holder name carries
        its pid: a lease the killed one left does not count)."""
        assert self.store is not None
        pid = f":{self.procs.get('watcher').pid}:"
        deadline = time.monotonic() + timeout_s
        while pid not in str(self.store.client.get(self.store.keys.watcher_leader)):
            if time.monotonic() > deadline:
                raise ConfigError(f"the watcher did not lead; see {self.workdir / 'watcher.log'}")
            time.sleep(0.01)

    def wait_worker(self, timeout_s: float = 120) -> None:
        """Wait until a lifecycle worker serves (a ping through its housekeeping queue);
        a process that died meanwhile ends the wait at once, naming it."""
        assert self.app is not None
        from celery.exceptions import TimeoutError as NoAnswer

        ping = self.app.send_task("housekeeping.ping", args=["ready"])
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                ping.get(timeout=1.0)
                return
            except NoAnswer:
                dead = self.alive()
                if dead or time.monotonic() > deadline:
                    why = f"{', '.join(dead)} died" if dead else f"no answer in {timeout_s:g} s"
                    raise ConfigError(
                        f"no lifecycle worker served ({why}); see {self.workdir}/worker.log"
                    ) from None

    def nic_state(self, host: str) -> Path:
        """The file the simulated NICs of ``host`` keep their services in."""
        return self.workdir / "mnt" / ".state" / "nics" / f"{host}.json"

    def wait_node_worker(self, timeout_s: float = 120) -> None:
        """Wait until the node worker serves its queues (a ping through the last one)."""
        assert self.app is not None
        host = list(self.mapping.computes)[-1]
        queue = settings_of(self.app).pipeline.queues.node_prefix + host
        ask(self.app, "node.ping", host, queue, args=[host]).get(timeout=timeout_s)

    def emulator_times(self, index: int) -> Path:
        """Where held node emulator ``index`` writes when its steps ended."""
        return emulator_times(self.workdir, index)

    def alive(self) -> list[str]:
        """Names of the started processes that died (empty when all run)."""
        dead = self.procs.dead()
        if (
            self.redis is not None
            and self.redis.process is not None
            and self.redis.process.poll() is not None
        ):
            dead.append("redis")
        return dead

    def footprint(self, name: str) -> tuple[int, float]:
        """(threads, resident MiB) of the started process ``name`` (:mod:`procstat`)."""
        return self.procs.footprint(name)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds used so far by each started process, redis and this one
        (:mod:`procstat`)."""
        pids = self.procs.pids()
        if self.redis is not None and self.redis.process is not None:
            pids["redis"] = self.redis.process.pid
        return procstat.cpu_seconds(pids)

    def stop(self) -> None:
        """Stop everything that was started, newest first."""
        self._stopping.set()
        if self.flux is not None:
            self.flux.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        if self.delivery is not None:
            self.delivery.join(10)
        # every pipeline process at once (each shuts down on its own), then the API server
        # they were talking to; then redis
        self.procs.stop(last=("kube-api",))
        if self.real_dws is not None:
            self.real_dws.stop()
        if self.dws is not None:
            self.dws.close()  # its connections to the API server stopped above
        if self.redis is not None:
            # results this process awaited unsubscribe when the garbage collector frees
            # them: let that happen while Redis still answers, not in a __del__ after it
            gc.collect()
            self.redis.stop()
        if self.fabric is not None:
            self.fabric.stop()

    def __enter__(self) -> SimulatedSystem:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()
