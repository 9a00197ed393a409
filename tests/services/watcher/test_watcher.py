"""The watcher: coalesced observes, resume, relist on 410, leader election, API-server restarts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.resources import DWS, TYPES
from coral2_sim.kube.store import KubeStore
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.services.watcher import Watcher
from pipeline.store import Store


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append((name, dict(kwargs)))

    def jobs(self) -> list[int]:
        with self.lock:
            return [int(k["jobid"]) for n, k in self.calls if n == "dws.observe"]


def wait_for(predicate: Callable[[], bool], what: str, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def wf(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"desiredState": "Proposal"}}


@contextmanager
def running(watcher: Watcher) -> Iterator[Watcher]:
    """Run ``watcher`` in a thread for the block; stop it after."""
    thread = start(watcher)
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(timeout=10)


def seen_rv(store: Store, jobid: int) -> str:
    """The resourceVersion of the latest event of job ``jobid`` the watcher noted."""
    raw = store.client.hget(store.keys.workflow_seen, str(jobid)) or b""
    return raw.decode().partition(" ")[0]


def start(watcher: Watcher) -> threading.Thread:
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    return thread


def test_workflow_events_enqueue_one_pending_observe_per_job(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    rec = Recorder()
    watcher = Watcher(store, dws, rec, lease_s=1.0)
    with running(watcher):
        dws.create_workflow(wf("fluxjob-7"))
        for state in ("Setup", "DataIn", "PreRun"):
            last = dws.patch("workflows", "fluxjob-7", {"spec": {"desiredState": state}})
        rv = last["metadata"]["resourceVersion"]
        wait_for(lambda: seen_rv(store, 7) == rv, "the watcher handling the last event")
        assert rec.jobs() == [7]  # one observe for the four events: one was pending
        store.client.delete(store.keys.observe_pending(7))
        dws.patch("workflows", "fluxjob-7", {"spec": {"desiredState": "PostRun"}})
        wait_for(lambda: rec.jobs() == [7, 7], "a second observe once the first ran")


def test_foreign_workflows_are_ignored_with_one_warning(
    store: Store, kube: tuple[KubeApiServer, DwsClient], caplog: pytest.LogCaptureFixture
) -> None:
    _, dws = kube
    rec = Recorder()
    watcher = Watcher(store, dws, rec, lease_s=1.0)
    caplog.set_level(logging.WARNING, logger="coral2_pipeline.watch")
    with running(watcher):
        dws.create_workflow(wf("slurm-42"))
        dws.patch("workflows", "slurm-42", {"spec": {"desiredState": "Setup"}})
        dws.create_workflow(wf("fluxjob-8"))
        wait_for(lambda: rec.jobs() == [8], "the flux job's observe")
    warnings = [r for r in caplog.records if "slurm-42" in r.getMessage()]
    assert len(warnings) == 1


def test_storage_events_enqueue_storage_observes(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    rec = Recorder()
    watcher = Watcher(store, dws, rec, lease_s=1.0)
    with running(watcher):
        dws.create("storages", {"metadata": {"name": "rabbit9"}, "spec": {}})
        wait_for(
            lambda: ("storage.observe", {"name": "rabbit9"}) in rec.calls, "the storage observe"
        )


def test_a_restarted_watcher_resumes_from_the_last_resource_version(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    dws.create_workflow(wf("fluxjob-1"))
    first = Recorder()
    watcher = Watcher(store, dws, first, lease_s=1.0)
    thread = start(watcher)
    wait_for(lambda: first.jobs() == [1], "the initial list")
    watcher.stop()
    thread.join(timeout=10)
    store.client.delete(store.keys.observe_pending(1))
    dws.create_workflow(wf("fluxjob-2"))
    second = Recorder()
    again = Watcher(store, dws, second, lease_s=1.0)
    with running(again):
        wait_for(lambda: 2 in second.jobs(), "the event that happened while down")
        # a relist would have handled fluxjob-1 before fluxjob-2 (a list is in order)
        assert second.jobs() == [2]


def test_a_too_old_resource_version_relists(store: Store) -> None:
    with KubeApiServer(store=KubeStore(event_log_size=2)) as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api, outage_budget_s=1)
        for i in range(5):
            dws.create_workflow(wf(f"fluxjob-{i}"))
        store.client.set(store.keys.watch_rv("workflows"), "1")
        rec = Recorder()
        watcher = Watcher(store, dws, rec, lease_s=1.0)
        with running(watcher):
            wait_for(lambda: sorted(rec.jobs()) == [0, 1, 2, 3, 4], "a relist of every workflow")
            api.close()


def test_only_the_leader_enqueues_and_a_standby_takes_over(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    a_rec, b_rec = Recorder(), Recorder()
    a = Watcher(store, dws, a_rec, lease_s=1.0, identity="a")
    b = Watcher(store, dws, b_rec, lease_s=1.0, identity="b")
    ta = start(a)
    wait_for(lambda: a.leading, "a to lead")
    tb = start(b)
    try:
        dws.create_workflow(wf("fluxjob-31"))
        wait_for(lambda: a_rec.jobs() == [31], "the leader's observe")
        assert not b.leading
        a._stop.set()  # dies without resigning: its lease must expire
        ta.join(timeout=10)
        store.client.set(store.keys.watcher_leader, "a", px=1000)
        wait_for(lambda: b.leading, "the standby to take over once the lease expired")
        store.client.delete(store.keys.observe_pending(32))
        dws.create_workflow(wf("fluxjob-32"))
        wait_for(lambda: 32 in b_rec.jobs(), "the new leader's observe")
        assert 32 not in a_rec.jobs()
    finally:
        b.stop()
        tb.join(timeout=10)


@dataclass
class Served:
    """A watcher of an API server over a store of its own, which a test may stop and
    start again on the same port."""

    kstore: KubeStore
    server: KubeApiServer
    port: int
    api: client.ApiClient
    dws: DwsClient
    rec: Recorder
    watcher: Watcher


def served(store: Store) -> Served:
    kstore = KubeStore()
    server = KubeApiServer(store=kstore).start()
    port = int(server.url.rsplit(":", 1)[1])
    api = client.ApiClient(client.Configuration(host=server.url))
    dws = DwsClient(api, outage_budget_s=0.5)
    rec = Recorder()
    return Served(kstore, server, port, api, dws, rec, Watcher(store, dws, rec, lease_s=1.0))


def test_the_watcher_survives_an_api_server_restart(store: Store) -> None:
    it = served(store)
    kstore, server, port, api, dws, rec = it.kstore, it.server, it.port, it.api, it.dws, it.rec
    with running(it.watcher):
        dws.create_workflow(wf("fluxjob-41"))
        wait_for(lambda: rec.jobs() == [41], "the first observe")
        server.stop()
        kstore.reopen()  # the objects survive, as etcd's would
        time.sleep(0.5)
        server = KubeApiServer(port=port, store=kstore).start()
        dws.create_workflow(wf("fluxjob-42"))
        wait_for(lambda: 42 in rec.jobs(), "an observe after the restart", timeout_s=20)
        server.stop()
        api.close()


def test_a_workflow_deleted_while_no_watch_ran_is_observed_after_the_relist(
    store: Store,
) -> None:
    it = served(store)
    kstore, server, port, api, dws, rec = it.kstore, it.server, it.port, it.api, it.dws, it.rec
    with running(it.watcher):
        dws.create_workflow(wf("fluxjob-43"))
        wait_for(lambda: rec.jobs() == [43], "the first observe")
        store.watch.unmark(43)  # that observe ran
        server.stop()
        workflows = TYPES[(DWS, "workflows")]
        kstore.delete(workflows, "default", "fluxjob-43")  # its DELETED event: never seen
        kstore.restart()  # the watch cache starts afresh: the watch resumes with 410
        server = KubeApiServer(port=port, store=kstore).start()
        wait_for(lambda: rec.jobs() == [43, 43], "an observe of the job whose Workflow went")
        server.stop()
        api.close()
