"""The simulated clientmount daemon: mounts and unmounts a node's ClientMounts.

For the demo and the tests the node worker plays ``nnf-clientmount`` for its
nodes: it watches ClientMount objects (one namespace per node) through the
API server and, while the node's service runs, makes each mount's directory
under ``<root>/<node>/`` (or removes it) and reports ``mounted`` /
``unmounted`` in the ClientMount status — which the simulated DWS
controller, started with ``mount_agent=False``, waits for.

It runs as root in the demo, so a mount path is confined to its node's
directory: one that leads outside it (``..``, a symbolic link) is neither
made nor removed, and the ClientMount reports the error. The services'
running flags live in ``<root>/.state/clientmount-services.json``, so that
a restarted node worker finds them as systemd would.

For the chaos harness, :class:`SlowMounts` makes the mounts of a share of
the Workflows, drawn at random, take longer (their ClientMounts report
``mounted`` that much later).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import shutil
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coral2_sim.node.service import SimulatedService
from pipeline.clients.k8s import DwsClient, api_client
from pipeline.errors import KubeError, NotFound
from pipeline.settings import Settings

log = logging.getLogger("coral2_pipeline.node_worker.agent")

#: The User-Agent of the simulated daemon's requests (the real one is HPE's own client).
USER_AGENT = "nnf-clientmount (simulated)"


WORKFLOW_LABEL = "dataworkflowservices.github.io/workflow.name"
#: A file that, inside a mounted file system, keeps it busy: its unmount fails (``umount``'s
#: "target is busy") until the file is gone, as when a process of the job outlives it.
BUSY = ".busy"


@dataclass(frozen=True)
class SlowMounts:
    """The mounts of a Workflow drawn with chance ``rate`` (from ``seed`` and its name, so a
    harness knows which) take ``seconds`` on every node."""

    rate: float
    seconds: float
    seed: int = 1

    def slow(self, workflow: str) -> bool:
        """Whether ``workflow``'s mounts are slow."""
        digest = hashlib.sha256(f"{self.seed}:mount:{workflow}".encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32 < self.rate


def agent_client(settings: Settings) -> DwsClient:
    """The simulated daemon's own DWS client (the node worker has none)."""
    kubeconfig = settings.pipeline.kubeconfig or settings.rabbit.kubeconfig
    api = api_client(host=settings.pipeline.api_host, kubeconfig=kubeconfig, user_agent=USER_AGENT)
    return DwsClient(api, namespace=settings.pipeline.namespace)


def confined(base: Path, mount_path: str) -> Path | None:
    """``mount_path`` under ``base``, or None when it resolves outside it."""
    base = base.resolve()
    path = (base / mount_path.lstrip("/")).resolve()
    return path if path == base or base in path.parents else None


class SimulatedAgent:
    """Reconciles the ClientMounts of ``hosts`` whose service runs."""

    def __init__(
        self, dws: DwsClient, hosts: list[str], root: Path, slow: SlowMounts | None = None
    ) -> None:
        self.dws = dws
        self.hosts = set(hosts)
        self.root = root
        self.slow = slow
        self._first_seen: dict[tuple[str, str], float] = {}  # (host, name) of slow mounts
        state = root / ".state" / "clientmount-services.json"  # as node-worker names it
        self.service = SimulatedService(on_start=self.kick, state_file=state)
        self._queue: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def kick(self, host: str) -> None:
        """Look at ``host``'s ClientMounts soon."""
        self._queue.put(host)

    def reconcile(self, host: str) -> None:
        """Bring every ClientMount of ``host`` to its desired state, if the service runs."""
        if not self.service.running(host):
            return
        items, _ = self.dws.list_objects("clientmounts", namespace=host)
        for item in items:
            self._apply(host, item)

    def _apply(self, host: str, item: dict[str, Any]) -> None:
        spec, status = item.get("spec") or {}, item.get("status") or {}
        desired = spec.get("desiredState")
        if desired not in ("mounted", "unmounted"):
            return
        mounts = spec.get("mounts") or []
        reported = status.get("mounts") or []
        if status.get("allReady") and all(m.get("state") == desired for m in reported):
            return
        if desired == "mounted" and self._slowed(host, item):
            return
        states, errors = [], []
        for mount in mounts:
            path = confined(self.root / host, str(mount.get("mountPath", "")))
            if path is None:
                errors.append(f"mount path {mount.get('mountPath')!r} leads outside {host}'s root")
                states.append({"state": desired, "ready": False})
                continue
            if desired == "mounted":
                path.mkdir(parents=True, exist_ok=True)
            elif (path / BUSY).exists():  # a process of the job still holds it
                errors.append(f"unmount of {mount.get('mountPath')} failed: target is busy")
                states.append({"state": desired, "ready": False})
                continue
            else:
                shutil.rmtree(path, ignore_errors=True)
            states.append({"state": desired, "ready": True})
        body: dict[str, Any] = {"allReady": not errors, "mounts": states}
        if errors:
            log.warning("clientmounts of %s: %s", host, "; ".join(errors))
            body["error"] = {"message": "; ".join(errors), "severity": "Fatal", "type": "User"}
        name = item["metadata"]["name"]
        with suppress(NotFound):  # deleted meanwhile: nothing left to report
            self.dws.patch("clientmounts", name, {"status": body}, namespace=host, status=True)

    def _slowed(self, host: str, item: dict[str, Any]) -> bool:
        """Whether a slow mount still takes its time (it is looked at again then)."""
        meta = item.get("metadata") or {}
        if self.slow is None or not self.slow.slow(
            (meta.get("labels") or {}).get(WORKFLOW_LABEL, "")
        ):
            return False
        key = (host, str(meta.get("name")))
        left = self._first_seen.setdefault(key, time.monotonic()) + self.slow.seconds
        left -= time.monotonic()
        if left <= 0:
            del self._first_seen[key]
            return False
        timer = threading.Timer(left, self.kick, args=(host,))
        timer.daemon = True
        timer.start()
        return True

    def _watch(self) -> None:
        def on_event(kind: str, obj: dict[str, Any]) -> None:
            host = obj.get("metadata", {}).get("namespace")
            if host in self.hosts and kind != "DELETED":
                self.kick(host)

        self.dws.follow("clientmounts", on_event, self._stop, all_namespaces=True)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                hosts = {self._queue.get(timeout=0.2)}
            except queue.Empty:
                continue
            while not self._queue.empty():
                hosts.add(self._queue.get_nowait())
            for host in hosts - {""}:
                try:
                    self.reconcile(host)
                except KubeError as exc:
                    log.warning("clientmounts of %s: %s; again", host, exc)
                    threading.Timer(0.2, self.kick, args=(host,)).start()

    def _follow_service(self) -> None:
        """Apart from the node worker (``sim clientmountd``): the worker starts and stops
        the service in its state file; look at each node whose service started."""
        while not self._stop.wait(0.1):
            for host in self.service.refresh():
                self.kick(host)

    def start(self, *, apart: bool = False) -> SimulatedAgent:
        """Start reconciling; ``apart``: in a process of its own, following the service
        state the node worker writes (as nnf-clientmountd runs beside the node worker,
        and outlives it)."""
        for host in self.service.running_hosts():  # a restart: what the service still owes
            self.kick(host)
        targets = [(self._watch, "clientmount-watch"), (self._work, "clientmount-agent")]
        if apart:
            targets.append((self._follow_service, "clientmount-service"))
        for target, name in targets:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._queue.put("")
        for thread in self._threads:
            thread.join(timeout=2)
