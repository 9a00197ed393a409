"""The watcher tests' fixtures: a DWS client of an API server of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient


@pytest.fixture
def dws() -> Iterator[DwsClient]:
    with KubeApiServer() as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        yield DwsClient(api, outage_budget_s=1)
        api.close()
