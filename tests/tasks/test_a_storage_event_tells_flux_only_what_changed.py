"""storage.observe and storage.resync on a simulated API server: a Ready rabbit's ssds come
up, a compute that loses PCIe is drained, the same Storage observed again sends nothing,
an excluded compute gets nothing, and a Storage of no rabbit in the mapping is an error
that sends nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.dws.fixtures import (
    install_cluster,
    set_compute_access,
    set_rabbit_status,
    storage_object,
)
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store import Store
from tests.tasks.eager_app import TiB, eager_app, store_of_app


def app_with(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient], **env: str
) -> Celery:
    app = eager_app(
        tmp_path, redis_url, kube[0].url,
        CORAL2_PIPELINE_PIPELINE__CLUSTER_NAME="demo",
        CORAL2_PIPELINE_PIPELINE__CHUNKS_PER_NNF="2",
        **env,
    )  # fmt: skip
    install_cluster(kube[1], RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])}))
    return app


def run(app: Celery, task: str, **kwargs: Any) -> Any:
    return app.tasks[task].apply(kwargs=kwargs).get()


def told(store: Store) -> list[tuple[str, dict[str, Any]]]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [(f[b"kind"].decode(), json.loads(f[b"payload"])) for _, f in entries]


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    return app_with(tmp_path, redis_url, kube)


def test_a_ready_rabbit_brings_its_ssds_up_and_a_replay_sends_nothing(app: Celery) -> None:
    store = store_of_app(app)
    run(app, "storage.observe", name="rabbit1")
    assert told(store) == [
        ("set-status", {"resource_path": "/demo/chassis0/ssd0", "status": "up"}),
        ("set-status", {"resource_path": "/demo/chassis0/ssd1", "status": "up"}),
    ]
    run(app, "storage.observe", name="rabbit1")
    run(app, "storage.resync")
    assert len(told(store)) == 2


def test_a_compute_losing_pcie_is_drained_and_an_offline_rabbit_takes_its_ssds_down(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store = store_of_app(app)
    run(app, "storage.observe", name="rabbit1")
    set_compute_access(kube[1], "rabbit1", "c2", "Offline")
    run(app, "storage.observe", name="rabbit1")
    assert told(store)[2:] == [
        ("drain", {"targets": "c2", "reason": "rabbit lost PCIe connection", "mode": "update"})
    ]
    set_rabbit_status(kube[1], "rabbit1", "Offline")
    run(app, "storage.observe", name="rabbit1")
    assert [p["status"] for k, p in told(store)[3:]] == ["down", "down"]


def test_an_excluded_compute_gets_no_rpc(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app = app_with(tmp_path, redis_url, kube, CORAL2_PIPELINE_RESOURCE__EXCLUDE="c2")
    set_compute_access(kube[1], "rabbit1", "c1", "Offline")
    set_compute_access(kube[1], "rabbit1", "c2", "Offline")
    run(app, "storage.observe", name="rabbit1")
    drains = [p for k, p in told(store_of_app(app)) if k == "drain"]
    assert [d["targets"] for d in drains] == ["c1"]


def test_a_storage_of_no_rabbit_in_the_mapping_is_an_error_that_sends_nothing(
    app: Celery, kube: tuple[KubeApiServer, DwsClient], caplog: pytest.LogCaptureFixture
) -> None:
    kube[1].create("storages", storage_object("rabbit9"))
    run(app, "storage.observe", name="rabbit9")
    assert told(store_of_app(app)) == []
    assert "Storage rabbit9 is not a rabbit of" in caplog.text


def test_a_new_flux_incarnation_hears_every_rabbit_again(app: Celery) -> None:
    store = store_of_app(app)
    run(app, "storage.resync")
    store.resource_log.post(
        {
            "timestamp": 5.0,
            "name": "restart",
            "context": {"ranks": "0-1", "online": "", "nodelist": "c[1-2]"},
        }
    )
    run(app, "storage.resync")
    assert [k for k, _ in told(store)] == ["set-status"] * 4
