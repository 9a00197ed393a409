"""A simulated DWS side: API server with the DWS webhooks, the sample cluster, the controller."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.dws import admission as dws_admission
from coral2_sim.dws.controller import DwsController
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.dws.nnf_driver import Faults
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping


@dataclass
class DwsSide:
    server: KubeApiServer
    dws: DwsClient
    controller: DwsController
    faults: Faults
    mapping: RabbitMapping


@pytest.fixture
def dws_side() -> Iterator[DwsSide]:
    with KubeApiServer() as server:
        dws_admission.install(server.store)
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api, outage_budget_s=5)
        mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
        install_cluster(dws, mapping)
        faults = Faults()
        controller = DwsController(api, latency_s=0.002, faults=faults, mount_timeout_s=0.5).start()
        yield DwsSide(server, dws, controller, faults, mapping)
        controller.stop()
        api.close()
