"""Fixtures: a real Celery app and an in-process threads worker on the session's redis-server.

Imported by the conftest of each folder whose tests run tasks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

import tests.platform.probe_tasks  # noqa: F401  (registers the probe tasks)
from pipeline.clients.k8s import DwsClient
from pipeline.platform.app import create_app
from pipeline.platform.task import close_dws_clients
from pipeline.settings import load_settings


@pytest.fixture(scope="session")
def kube_api() -> Iterator[KubeApiServer]:
    with KubeApiServer() as server:
        yield server


@pytest.fixture(scope="session")
def celery_app(redis_url: str, kube_api: KubeApiServer) -> Celery:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "celerytest",
            "CORAL2_PIPELINE_PIPELINE__API_HOST": kube_api.url,
        }
    )
    return create_app(settings)


@pytest.fixture(scope="session")
def worker(celery_app: Celery) -> Iterator[None]:
    with start_worker(
        celery_app,
        pool="threads",
        concurrency=4,
        perform_ping_check=False,
        queues=["lifecycle", "timeouts", "housekeeping"],
        shutdown_timeout=30,
        # heartbeats on, as a deployed worker has them: its event dispatcher is then
        # live, and a monitor's enable_events turns task events on
        without_heartbeat=False,
    ):
        yield


@pytest.fixture
def kube() -> Iterator[tuple[KubeApiServer, DwsClient]]:
    """A fresh API server of its own and a DWS client of it (outages fail fast)."""
    with KubeApiServer() as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        try:
            yield server, DwsClient(api, outage_budget_s=1)
        finally:
            api.close()  # its pooled sockets: left to the collector, a ResourceWarning
            close_dws_clients(server.url)  # the clients the tests' tasks made of it
        api.close()
