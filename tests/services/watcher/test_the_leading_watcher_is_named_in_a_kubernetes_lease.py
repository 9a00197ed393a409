"""The leading watcher is named where an admin looks for a leader: the
``coordination.k8s.io`` Lease ``coral2-pipeline-watch``, beside the Workflows. A new
leader takes the Lease over (a transition counted), a clean stop leaves it naming
nobody, and an API server that refuses the Lease costs no leadership."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.clients.lease import WATCHER_LEASE, LeaseMirror, micro_time
from pipeline.services.watcher import Watcher
from pipeline.store import Store


def wait_for(predicate: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def lease_spec(dws: DwsClient) -> client.V1LeaseSpec | None:
    try:
        lease = client.CoordinationV1Api(dws.api).read_namespaced_lease(WATCHER_LEASE, "default")
    except client.ApiException as exc:
        assert exc.status == 404
        return None
    spec: client.V1LeaseSpec = lease.spec
    return spec


def holder(dws: DwsClient) -> str | None:
    spec = lease_spec(dws)
    return None if spec is None else spec.holder_identity


def no_observes(name: str, kwargs: dict[str, object]) -> None:
    pass


@contextmanager
def leading(store: Store, dws: DwsClient, identity: str, lease_s: float = 1.0) -> Iterator[Watcher]:
    """A watcher replica that mirrors its leadership in the Lease, run for the block."""
    mirror = LeaseMirror(dws.api, "default")
    watcher = Watcher(store, dws, no_observes, lease_s=lease_s, identity=identity, mirror=mirror)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(timeout=15)
    assert not thread.is_alive()


def test_the_leader_names_itself_and_a_clean_stop_names_nobody(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    before = datetime.now(UTC).replace(microsecond=0)
    with leading(store, dws, "a"):
        wait_for(lambda: holder(dws) == "a", "the Lease to name the leader")
        spec = lease_spec(dws)
        assert spec is not None
        assert spec.renew_time >= before and spec.acquire_time >= before
        assert spec.lease_duration_seconds > 1.0  # the mirror's period and the lease
        assert not spec.lease_transitions
    assert lease_spec(dws) is not None and holder(dws) is None


def test_a_new_leader_takes_the_lease_over_from_a_dead_one(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    # what a leader that died without a clean stop leaves behind
    LeaseMirror(dws.api, "default").show("dead", 11, datetime(2026, 1, 1, tzinfo=UTC))
    with leading(store, dws, "b"):
        wait_for(lambda: holder(dws) == "b", "the new leader to take the Lease over")
        spec = lease_spec(dws)
        assert spec is not None and spec.lease_transitions == 1
        assert micro_time(spec.acquire_time) > "2026-01-01T00:00:00.000000Z"


def test_a_refused_lease_costs_no_leadership_and_is_said_once(
    store: Store, kube: tuple[KubeApiServer, DwsClient], caplog: pytest.LogCaptureFixture
) -> None:
    server, dws = kube
    server.inject(code=403, path="/leases", times=10_000)
    caplog.set_level(logging.WARNING, "coral2_pipeline.watch")
    with leading(store, dws, "c", lease_s=0.6) as watcher:
        wait_for(lambda: watcher.leading, "the watcher to lead")
        wait_for(lambda: "cannot write the Lease" in caplog.text, "the refusal to be said")
        time.sleep(2.5)  # several more turns of the mirror, refused each time
        assert watcher.leading
        assert caplog.text.count("cannot write the Lease") == 1
