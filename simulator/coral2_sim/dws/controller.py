"""The simulated DWS controller: DWS's Workflow reconciler plus the nnf driver.

It is a real controller: it runs in its own thread and talks to the API
server only through the official kubernetes client (``DwsClient``),
watching Workflows and writing them back with full-object updates that
carry a resourceVersion (a conflict just means "reconcile again"). The
admission webhooks are installed in the API server itself
(:mod:`coral2_sim.dws.admission`).

Per-state latency and faults are configurable (:class:`~coral2_sim.dws.nnf_driver.Faults`).
With ``mount_agent=True`` the controller also plays the clientmount daemon
of every compute; with False it waits for a node worker to report mounts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import Any

from kubernetes import client

from coral2_sim.dws.nnf_datamovement import delete_datamovements
from coral2_sim.dws.nnf_driver import (
    Context,
    Faults,
    Waiting,
    env_for,
    micro_time,
    parse_all,
    work,
)
from coral2_sim.dws.nnf_mounts import delete_clientmounts, release_mounts
from coral2_sim.dws.nnf_persistent import delete_owned
from coral2_sim.dws.nnf_storage import StorageReconciler
from coral2_sim.dws.workqueue import WorkQueue
from coral2_sim.kube.patch import json_copy
from pipeline.clients.k8s import DwsClient
from pipeline.errors import Conflict, KubeError, NotFound, Unavailable
from pipeline.model.directives import CreatePersistent

log = logging.getLogger("coral2_coral2_sim.dws")

DWS_FINALIZER = "dataworkflowservices.github.io/workflow"
NNF_FINALIZER = "nnf.cray.hpe.com/nnf_workflow"
PRIORITY = {"Error": 4, "TransientCondition": 3, "Completed": 1}


def go_duration(seconds: float) -> str:
    """Format a duration as Go does, rounded to µs: ``1.234567s``, ``2m3.5s``, ``850.123µs``."""
    micros = round(seconds * 1_000_000)
    if micros < 1000:
        return f"{micros}µs"
    if micros < 1_000_000:
        return f"{micros / 1000:g}ms"
    minutes, rest = divmod(micros, 60_000_000)
    hours, minutes = divmod(minutes, 60)
    secs = f"{rest / 1_000_000:.6f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    if minutes:
        return f"{minutes}m{secs}"
    return secs


def summarize(entries: list[dict[str, Any]]) -> tuple[bool, str, str]:
    """Return (ready, status, message) from the current state's driver entries."""
    if not entries:
        return True, "Completed", ""
    ready = all(e.get("completed") for e in entries)
    ranked = sorted(
        entries, key=lambda e: PRIORITY.get(e.get("status", "Pending"), 2), reverse=True
    )
    top = PRIORITY.get(ranked[0].get("status", "Pending"), 2)
    status = {4: "Error", 3: "TransientCondition", 1: "Completed"}.get(top, "DriverWait")
    message = ""
    for entry in ranked:
        if PRIORITY.get(entry.get("status", "Pending"), 2) != top:
            break
        if entry.get("message"):
            message = f"DW Directive {entry['dwdIndex']}: {entry['message']}"
    return ready, status, message


#: How soon a failed driver entry is tried again, and the longest wait between tries
#: (controller-runtime's per-item backoff starts at milliseconds and ends at 1000 s; the
#: simulator keeps the doubling and a shorter ceiling).
RETRY_FIRST_S = 0.5
RETRY_MOST_S = 30.0


class DwsController:
    """Reconciles every Workflow of one namespace; start() runs it in threads."""

    def __init__(
        self,
        api: client.ApiClient | DwsClient,
        *,
        namespace: str = "default",
        latency_s: float = 0.005,
        faults: Faults | None = None,
        mount_agent: bool = True,
        mount_timeout_s: float = 30.0,
        reconcilers: int = 4,
    ) -> None:
        self.dws = (  # a client of its own, or the caller's (kube_local.local_dws_client)
            api
            if isinstance(api, DwsClient)
            else DwsClient(api, namespace=namespace, outage_budget_s=5.0)
        )
        self.latency_s = latency_s
        self.faults = faults or Faults()
        self.mount_agent = mount_agent
        self.mount_timeout_s = mount_timeout_s
        self.reconcilers = reconcilers
        self._queue = WorkQueue()
        #: reconciles begun, by Workflow name (tests wait on them, never on the clock)
        self.reconciles: Counter[str] = Counter()
        self._cache: dict[str, dict[str, Any]] = {}
        self._cache_lock = threading.Lock()
        self._started: dict[tuple[str, str], float] = {}
        #: (workflow, state, index) → (when its Error entry is tried again, the backoff)
        self._retry: dict[tuple[str, str, int], tuple[float, float]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._storage_thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> DwsController:
        """Start the watch thread, ``reconcilers`` reconcile threads (one Workflow each), and
        nnf-sos's Storage reconciler (a Storage's ``spec.state`` made its status)."""
        self._start_thread(self._watch_loop, "dws-watch")
        for index in range(self.reconcilers):
            self._start_thread(self._reconcile_loop, f"dws-reconcile-{index}")
        storages = StorageReconciler(self.dws)
        self._storage_thread = threading.Thread(
            target=storages.run, args=(self._stop,), name="dws-storages", daemon=True
        )
        self._storage_thread.start()
        return self

    def _start_thread(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        """Stop every thread."""
        self._stop.set()
        self._queue.close()
        watcher, *reconcilers = self._threads
        for thread in reconcilers:
            thread.join(timeout=5)
        watcher.join(timeout=0.05)  # a daemon blocked in a watch read ends with the stream
        if self._storage_thread is not None:
            self._storage_thread.join(timeout=0.05)

    def kick(self, name: str) -> None:
        """Reconcile ``name`` soon (tests and fault changes)."""
        self._queue.add(name)

    # --- threads -------------------------------------------------------------------
    def _watch_loop(self) -> None:
        self.dws.follow("workflows", self._on_event, self._stop)

    # --- the informer cache: reconciles read what the watch delivered, as controller-runtime
    # does; a write from a stale copy fails with 409 and the reconcile runs again ----------
    def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self._forget(name)
        else:
            self._remember(obj)
        self._queue.add(name)

    def _remember(self, obj: dict[str, Any]) -> None:
        """Cache ``obj`` unless the cache already holds a newer version of it."""
        name, rv = obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"])
        with self._cache_lock:
            cached = self._cache.get(name)
            if cached is None or int(cached["metadata"]["resourceVersion"]) < rv:
                self._cache[name] = obj

    def _read(self, name: str) -> dict[str, Any] | None:
        """A private copy of the cached Workflow ``name`` (None: not seen, or deleted)."""
        with self._cache_lock:
            cached = self._cache.get(name)
        return None if cached is None else json_copy(cached)

    def _write(self, wf: dict[str, Any]) -> None:
        """Replace the Workflow (guarded by its resourceVersion) and cache the answer."""
        name = wf["metadata"]["name"]
        try:
            stored = self.dws.replace("workflows", name, wf)
        except NotFound:
            self._forget(name)
            raise
        meta = stored["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._forget(name)  # gone; its DELETED event may already have been handled
        else:
            self._remember(stored)

    def _forget(self, name: str) -> None:
        with self._cache_lock:
            self._cache.pop(name, None)
        for key in [k for k in list(self._retry) if k[0] == name]:
            self._retry.pop(key, None)

    def _reconcile_loop(self) -> None:
        """Reconcile names from the queue: a burst of events is one reconcile, and no
        Workflow is reconciled by two threads at once."""
        while (name := self._queue.get()) is not None:
            try:
                self._safe_reconcile(name)
            finally:
                self._queue.done(name)

    def _safe_reconcile(self, name: str) -> None:
        try:
            again = self.reconcile(name)
        except (Conflict, Unavailable) as exc:
            log.debug("reconcile %s: %s; again", name, exc)
            again = 0.01
        except NotFound:
            again = None
        except KubeError as exc:  # as a controller-runtime reconciler: log, back off, retry
            log.warning("reconcile %s: %s; again in 1s", name, exc)
            again = 1.0
        if again is not None:
            self._queue.add_after(name, again)

    # --- the reconciler ------------------------------------------------------------
    def reconcile(self, name: str) -> float | None:
        """One reconcile of Workflow ``name``; return when to look again (None: on events only)."""
        self.reconciles[name] += 1  # how often it looked: what a test waits on
        wf = self._read(name)
        if wf is None:
            return None
        meta, spec = wf["metadata"], wf.get("spec", {})
        status = wf.setdefault("status", {})
        if meta.get("deletionTimestamp"):
            return self._delete(wf)
        finalizers = list(meta.get("finalizers") or [])
        if DWS_FINALIZER not in finalizers or NNF_FINALIZER not in finalizers:
            meta["finalizers"] = finalizers + [
                f for f in (DWS_FINALIZER, NNF_FINALIZER) if f not in finalizers
            ]
            self._write(wf)
            return 0.0
        desired = spec.get("desiredState")
        if status.get("state") != desired:
            status.update(
                state=desired,
                ready=False,
                status="DriverWait",
                message="",
                desiredStateChange=micro_time(),
            )
            spec["forceReady"] = False
            self._started[(name, str(desired))] = time.monotonic()
            self._write(wf)
            return 0.0
        state = str(desired)
        if state == "Proposal" and not status.get("computes"):
            computes = {
                "metadata": {
                    "name": name,
                    "labels": {"dataworkflowservices.github.io/workflow.name": name},
                },
                "data": [],
            }
            try:
                self.dws.create("computes", computes)
            except KubeError as exc:
                if exc.status != 409:
                    raise
            status["computes"] = {"kind": "Computes", "name": name, "namespace": self.dws.namespace}
            self._write(wf)
            return 0.0
        if status.get("ready"):
            return None
        return self._drive(wf, state)

    def _drive(self, wf: dict[str, Any], state: str) -> float | None:
        name, spec, status = wf["metadata"]["name"], wf["spec"], wf["status"]
        started = self._started.setdefault((name, state), time.monotonic())
        directives = parse_all(list(spec.get("dwDirectives") or []))
        ctx = Context(
            self.dws, wf, directives, self.faults, started, self.mount_agent, self.mount_timeout_s
        )
        entries = [e for e in status.get("drivers") or [] if e.get("watchState") == state]
        waiting = False
        retry_in: float | None = None
        now = time.monotonic()
        for entry in entries:
            if entry.get("completed"):
                continue
            key = (name, state, int(entry.get("dwdIndex", 0)))
            if entry.get("status") == "Error" and not self._fault_clears(name, state, entry):
                # controller-runtime tries a failed reconcile again, backing off, so an
                # Error whose cause went away clears (nnf resets the entry each pass)
                at, backoff = self._retry.setdefault(key, (now + RETRY_FIRST_S, RETRY_FIRST_S))
                if now < at:
                    retry_in = min(retry_in or at - now, at - now)
                    continue
                self._retry[key] = (
                    now + min(backoff * 2, RETRY_MOST_S),
                    min(backoff * 2, RETRY_MOST_S),
                )
            fields = work(ctx, entry, self.latency_s)
            if fields is None or fields.get("status") != "Completed":
                waiting = True
            if fields is not None:
                entry.update(fields)
            if entry.get("status") != "Error":
                self._retry.pop(key, None)
        if state == "Proposal":
            refs = [
                {
                    "kind": "DirectiveBreakdown",
                    "name": f"{name}-{i}",
                    "namespace": self.dws.namespace,
                }
                for i, d in enumerate(directives)
                if d is not None and d.command in ("jobdw", "create_persistent", "persistentdw")
            ]
            status["directiveBreakdowns"] = refs
        ready, summary, message = summarize(entries)
        if not entries and time.monotonic() - started < self.latency_s:
            return self.latency_s
        if spec.get("forceReady"):
            ready, summary, message = True, "Completed", "Forced Ready"
        status.update(ready=ready, status=summary, message=message)
        if ready:
            if state == "PreRun":
                status["env"] = {**(status.get("env") or {}), **env_for(ctx)}
            status["readyChange"] = micro_time()
            status["elapsedTimeLastState"] = go_duration(time.monotonic() - started)
        self._write(wf)
        if ready:
            return None
        if waiting:
            return max(self.latency_s, 0.01)
        return 0.05 if retry_in is None else max(retry_in, 0.05)

    def _fault_clears(self, name: str, state: str, entry: dict[str, Any]) -> bool:
        chance = self.faults.at_random
        struck = None if chance is None else chance.fault_for(name)
        return any(
            f.state == state and f.index == entry.get("dwdIndex") and f.seconds is not None
            for f in [*self.faults.errors, *([struck] if struck is not None else [])]
        )

    def _delete(self, wf: dict[str, Any]) -> float | None:
        name, meta = wf["metadata"]["name"], wf["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if NNF_FINALIZER in finalizers:
            directives = parse_all(list(wf.get("spec", {}).get("dwDirectives") or []))
            # nnf's finalizer deletes the Workflow's children and waits for them to go
            # (DeleteChildren): the movements, then each NnfAccess, which waits for its
            # computes to unmount (a compute down does not hold it), as in Teardown
            ctx = Context(
                self.dws, wf, directives, self.faults, 0.0, self.mount_agent, self.mount_timeout_s
            )
            delete_datamovements(ctx)
            try:
                for index, d in enumerate(directives):
                    if d is not None:
                        release_mounts(ctx, index)
            except Waiting:
                return 0.05
            for index, d in enumerate(directives):
                if d is None:
                    continue
                for plural in ("directivebreakdowns", "servers"):
                    self.dws.delete(plural, f"{name}-{index}")
                if isinstance(d, CreatePersistent):
                    delete_owned(self.dws, name, index, d.name)
            items, _ = self.dws.list_objects(  # any left of a directive index no longer named
                "clientmounts",
                selector=f"dataworkflowservices.github.io/workflow.name={name}",
                all_namespaces=True,
            )
            delete_clientmounts(self.dws, items)
            meta["finalizers"] = [f for f in finalizers if f != NNF_FINALIZER]
            self._write(wf)
            return 0.0
        if finalizers == [DWS_FINALIZER]:
            self.dws.delete("computes", name)
            meta["finalizers"] = []
            self._write(wf)
            for key in [k for k in list(self._started) if k[0] == name]:
                self._started.pop(key, None)
            return None
        return None
